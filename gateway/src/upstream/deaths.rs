//! Backends known dead, announced the moment upstream learns it: the health checks mark one
//! down (`health.rs`), or a connection to it is refused while it was up (`attempt.rs`
//! `Engine::connect_failed`, on every path). Whoever must act on a death (the session layer
//! moves the dead backend's sessions in the background: `session/evacuate.rs`) subscribes;
//! upstream never knows who listens.

use std::net::SocketAddr;
use tokio::sync::broadcast;

/// Deaths a slow listener may fall behind by before it is told it lagged (and rescans).
const BACKLOG: usize = 256;

/// One backend that went from serving to known dead.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Death {
    /// Its pool's name.
    pub pool: String,
    /// Its address.
    pub backend: SocketAddr,
    /// What said so: `probe` (the health checks) or `connect-refused`.
    pub cause: &'static str,
}

/// The announcer of deaths; cloned into every part of upstream that learns of one.
#[derive(Debug, Clone)]
pub struct Deaths {
    tx: broadcast::Sender<Death>,
}

impl Default for Deaths {
    fn default() -> Deaths {
        Deaths {
            tx: broadcast::channel(BACKLOG).0,
        }
    }
}

impl Deaths {
    /// Tells every listener (nothing when none listens).
    pub fn announce(&self, pool: &str, backend: SocketAddr, cause: &'static str) {
        let _ = self.tx.send(Death {
            pool: pool.to_owned(),
            backend,
            cause,
        });
    }

    /// A listener for the deaths announced from now on.
    pub fn subscribe(&self) -> broadcast::Receiver<Death> {
        self.tx.subscribe()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn every_listener_hears_each_death_once() {
        let deaths = Deaths::default();
        deaths.announce("p", "127.0.0.1:1".parse().unwrap(), "probe"); // nobody listens yet
        let (mut a, mut b) = (deaths.subscribe(), deaths.clone().subscribe());
        deaths.announce("p", "127.0.0.1:2".parse().unwrap(), "connect-refused");
        for rx in [&mut a, &mut b] {
            let death = rx.recv().await.unwrap();
            assert_eq!(death.backend.port(), 2);
            assert_eq!(death.cause, "connect-refused");
            assert!(rx.try_recv().is_err(), "once");
        }
    }
}
