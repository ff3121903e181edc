//! What the session lifecycle tells whoever holds streams for sessions (`stream/` implements
//! it): the manager publishes a session's end, its move and a new config, and never calls
//! into streams itself.

use super::SessionRecord;
use crate::config::SessionConfig;
use crate::upstream::Pool;
use async_trait::async_trait;
use std::sync::Arc;

/// Told about session changes by the [`super::SessionManager`].
#[async_trait]
pub trait SessionObserver: Send + Sync {
    /// The session ended (deleted, expired, or no backend could take it over).
    fn ended(&self, id: &str);
    /// The session moved to another backend before a POST goes there; awaited, so what the
    /// observer opens on the new backend is there before the request.
    async fn moved(&self, pool: &Arc<Pool>, rec: &SessionRecord);
    /// The session config (at start and after a reload).
    fn configured(&self, config: &SessionConfig);
}
