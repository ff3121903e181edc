//! Sessions the gateway keeps for a legacy client on 2026-07-28 backends (the era bridge,
//! `crate::bridge`): the record is the same as any session's (the stored `initialize`, the
//! settings, the principal, the time-to-live), with a binding to no backend at all, since
//! every request of such a session is balanced on its own. Ending or expiring one therefore
//! deletes nothing upstream (`delete_upstream` finds no backend at the unspecified address).

use super::manager::{Caller, SessionManager};
use super::store::{CreateError, Quota};
use super::{now_ms, short, Binding, SessionRecord, Settings};
use crate::error::GatewayError;
use crate::upstream::Pool;
use std::net::{Ipv4Addr, SocketAddr, SocketAddrV4};
use std::sync::Arc;

/// The address a bridged binding names: no backend ever listens there.
pub const BRIDGED: SocketAddr = SocketAddr::V4(SocketAddrV4::new(Ipv4Addr::UNSPECIFIED, 0));

impl Binding {
    /// The binding of a bridged session: no backend, no backend session.
    pub fn bridged(generation: u64) -> Binding {
        Binding {
            backend: BRIDGED,
            backend_session: "".into(),
            generation,
            stale: false,
        }
    }

    /// Whether this is a bridged session's binding.
    pub fn is_bridged(&self) -> bool {
        self.backend == BRIDGED && self.backend_session.is_empty()
    }
}

/// A bridged session to open.
pub struct BridgedOpening<'a> {
    /// Who opens it.
    pub caller: &'a Caller,
    /// Upstream path its requests go to.
    pub path: Arc<str>,
    /// The client's `initialize` params, verbatim.
    pub init_params: Arc<str>,
    /// The version the gateway negotiated with the client.
    pub protocol_version: Arc<str>,
    /// Caps to respect.
    pub quota: Quota,
}

impl SessionManager {
    /// Opens a bridged session (the gateway answered the client's `initialize` itself): the
    /// same quotas as any session, counted as created in `pool`.
    pub async fn open_bridged(
        &self,
        pool: &Pool,
        opening: BridgedOpening<'_>,
    ) -> Result<SessionRecord, GatewayError> {
        let quota = opening.quota;
        let record = SessionRecord {
            id: super::new_session_id(),
            pool: pool.name.as_str().into(),
            client: opening.caller.identity.clone(),
            principal: opening.caller.principal.clone(),
            path: opening.path,
            init_params: opening.init_params,
            protocol_version: opening.protocol_version,
            binding: Binding::bridged(1),
            settings: Settings::default(),
            last_use_ms: now_ms(),
        };
        match self.store.create(record.clone(), quota).await {
            Ok(()) => {
                self.engine
                    .metrics()
                    .sessions_created
                    .with_label_values(&[&pool.name])
                    .inc();
                tracing::debug!(session = short(&record.id), "bridged session created");
                Ok(record)
            }
            Err(CreateError::Full { max }) => Err(GatewayError::session_limit(max)),
            Err(CreateError::ClientFull { max }) => Err(GatewayError::client_session_limit(max)),
            Err(CreateError::Store(e)) => Err(e.into()),
        }
    }
}
