//! The narrow interface streams use to reach a session (its backend, its binding, its use):
//! [`SessionLink`], implemented by the [`SessionManager`].

use crate::auth::Caller;
use crate::error::GatewayError;
use crate::session::store::Hold;
use crate::session::{Forwarded, Outgoing, SessionManager, SessionRecord};
use crate::upstream::client::Exchange;
use crate::upstream::Pool;
use async_trait::async_trait;
use mcp_wire::RequestId;
use std::sync::Arc;
use std::time::Duration;

/// What a stream may ask of the session it belongs to.
#[async_trait]
pub trait SessionLink: Send + Sync {
    /// Sends a request within the session, moving the session first when needed.
    async fn forward(
        &self,
        pool: &Arc<Pool>,
        rec: SessionRecord,
        out: Outgoing<'_>,
    ) -> Result<Forwarded, GatewayError>;
    /// One attempt on the session's current backend, without moving it.
    async fn send_on_binding(
        &self,
        pool: &Arc<Pool>,
        rec: &SessionRecord,
        out: &Outgoing<'_>,
    ) -> Result<Exchange, GatewayError>;
    /// Returns a finished exchange's connection to the pool.
    fn release(&self, exchange: Exchange);
    /// Tells the backend that request `id` is cancelled, in the background.
    fn cancel(&self, pool: &Arc<Pool>, rec: &SessionRecord, id: &RequestId, caller: &Caller);
    /// The session's backend broke the connection: its binding is suspect.
    async fn connection_lost(
        &self,
        pool: &Pool,
        rec: &SessionRecord,
        method_label: Option<&'static str>,
    ) -> Result<(), GatewayError>;
    /// Records use of the session.
    async fn used(&self, rec: &SessionRecord) -> Result<(), GatewayError>;
    /// Takes, renews or takes over the session's stream lease for `owner` (`owner.rs`).
    async fn hold_lease(&self, id: &str, owner: &str, ttl: Duration) -> Result<Hold, GatewayError>;
    /// Gives up `owner`'s stream lease.
    async fn release_lease(&self, id: &str, owner: &str) -> Result<(), GatewayError>;
}

#[async_trait]
impl SessionLink for SessionManager {
    async fn forward(
        &self,
        pool: &Arc<Pool>,
        rec: SessionRecord,
        out: Outgoing<'_>,
    ) -> Result<Forwarded, GatewayError> {
        SessionManager::forward(self, pool, rec, out).await
    }

    async fn send_on_binding(
        &self,
        pool: &Arc<Pool>,
        rec: &SessionRecord,
        out: &Outgoing<'_>,
    ) -> Result<Exchange, GatewayError> {
        SessionManager::send_on_binding(self, pool, rec, out).await
    }

    fn release(&self, exchange: Exchange) {
        self.engine().release(exchange);
    }

    fn cancel(&self, pool: &Arc<Pool>, rec: &SessionRecord, id: &RequestId, caller: &Caller) {
        SessionManager::cancel(self, pool, rec, id, caller);
    }

    async fn connection_lost(
        &self,
        pool: &Pool,
        rec: &SessionRecord,
        method_label: Option<&'static str>,
    ) -> Result<(), GatewayError> {
        SessionManager::connection_lost(self, pool, rec, method_label).await
    }

    async fn used(&self, rec: &SessionRecord) -> Result<(), GatewayError> {
        SessionManager::used(self, rec).await
    }

    async fn hold_lease(&self, id: &str, owner: &str, ttl: Duration) -> Result<Hold, GatewayError> {
        SessionManager::hold_lease(self, id, owner, ttl).await
    }

    async fn release_lease(&self, id: &str, owner: &str) -> Result<(), GatewayError> {
        SessionManager::release_lease(self, id, owner).await
    }
}
