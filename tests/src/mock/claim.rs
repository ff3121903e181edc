//! A port held for mock backends that die and come back on the same address.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;
use tokio::net::TcpListener;
use tokio::sync::watch;

/// A 127.0.0.1 port held for a test for as long as the claim lives, whether or not a mock is
/// listening on it, so a mock can die and a new one come back at the same address with no
/// window in which anyone else could take the port. The claim is a socket bound there with
/// SO_REUSEPORT that never listens: while no mock listens, connections are refused (like a
/// dead pod's); the kernel gives the port to no one else (not to a bind to port 0, not as a
/// connection's local port), and only a socket with SO_REUSEPORT of the same user could
/// share it (the gateway sets none). Each mock on it listens with SO_REUSEPORT too.
#[derive(Clone)]
pub struct PortClaim {
    /// The address held.
    pub addr: SocketAddr,
    _socket: Arc<tokio::net::TcpSocket>,
    /// Whether a mock listens on it now.
    listening: Arc<watch::Sender<bool>>,
}

impl PortClaim {
    /// Claims a free port on 127.0.0.1.
    pub fn new() -> PortClaim {
        let socket = tokio::net::TcpSocket::new_v4().expect("socket");
        socket.set_reuseport(true).expect("SO_REUSEPORT");
        socket
            .bind(SocketAddr::from(([127, 0, 0, 1], 0)))
            .expect("claim a port");
        PortClaim {
            addr: socket.local_addr().expect("addr"),
            _socket: Arc::new(socket),
            listening: Arc::new(watch::channel(false).0),
        }
    }

    /// A listener on the claimed address, once the last mock's listener is closed (two
    /// listeners on one port would share its connections).
    pub(super) async fn listen(&self) -> TcpListener {
        let mut listening = self.listening.subscribe();
        tokio::time::timeout(Duration::from_secs(5), listening.wait_for(|on| !*on))
            .await
            .expect("the previous mock on the claim stopped listening")
            .expect("claim alive");
        let socket = tokio::net::TcpSocket::new_v4().expect("socket");
        socket.set_reuseport(true).expect("SO_REUSEPORT");
        socket.bind(self.addr).expect("bind the claimed port");
        let listener = socket.listen(1024).expect("listen on the claimed port");
        self.listening.send_replace(true);
        listener
    }
}

impl Default for PortClaim {
    fn default() -> Self {
        Self::new()
    }
}

/// The accept loop's listener; gives the claim back (if any) once it is closed.
pub(super) struct Bound {
    pub(super) listener: Option<TcpListener>,
    pub(super) claim: Option<PortClaim>,
}

impl Drop for Bound {
    fn drop(&mut self) {
        drop(self.listener.take());
        if let Some(claim) = &self.claim {
            claim.listening.send_replace(false);
        }
    }
}
