//! The lifecycle of the sessions the gateway keeps for a legacy client on 2026-07-28 backends
//! (the era bridge, `crate::bridge::legacy_clients`, opens and moves them through these
//! methods, as every caller reaches sessions through the manager): the record is the same as
//! any session's (the stored `initialize`, the settings, the principal, the time-to-live), with
//! a binding to no backend at all, since every request of such a session is balanced on its
//! own. Ending or expiring one therefore deletes nothing upstream (`delete_upstream` finds no
//! backend at the unspecified address).

use super::manager::{Requester, SessionManager};
use super::reinit::Reason;
use super::store::{CreateError, Quota, Rebound};
use super::{now_ms, short, Binding, SessionRecord, Settings};
use crate::auth::Caller;
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
    pub caller: &'a Requester,
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
                self.metrics
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

    /// Moves a session onto the era bridge: its pool has no backend left that serves it
    /// natively, but 2026-07-28 ones (the last legacy pod of a rolling upgrade went). Fenced
    /// by the generation like any move (the loser adopts the winner's record); the session
    /// keeps its id, its stored `initialize` and its settings, and stays bridged from then on.
    /// Its held stream stops (the bridge serves the client's GET itself) and the backend
    /// session it leaves is deleted upstream when that backend still answers (for `caller`,
    /// the request's).
    pub async fn bridge_over(
        &self,
        pool: &Arc<Pool>,
        rec: &SessionRecord,
        caller: &Caller,
    ) -> Result<SessionRecord, GatewayError> {
        let binding = Binding::bridged(rec.binding.generation + 1);
        match self
            .store
            .rebind(&rec.id, rec.binding.generation, binding)
            .await?
        {
            Rebound::Won(record) => {
                self.metrics
                    .session_reinits
                    .with_label_values(&[&pool.name, Reason::Bridged.as_str()])
                    .inc();
                tracing::info!(session = short(&record.id), from = %rec.binding.backend, generation = record.binding.generation, "session continues on the era bridge");
                if let Some(observer) = self.observer() {
                    observer.ended(&rec.id);
                }
                self.delete_left_behind(pool, rec, Reason::Bridged, caller);
                Ok(record)
            }
            Rebound::Lost(lookup) => lookup.live(),
        }
    }
}
