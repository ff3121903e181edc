//! How sessions end: a client's DELETE, the expiry sweep's batches, and the best-effort DELETE
//! of the backend session either way; each counted once and told to the observers.

use super::{now_ms, GoneReason, SessionManager, SessionRecord};
use crate::auth::Caller;
use crate::error::GatewayError;
use crate::upstream::Pool;
use std::sync::Arc;

/// Expired sessions ended per store call.
const EXPIRY_BATCH: usize = 256;

impl SessionManager {
    /// Ends a session (client DELETE): its tombstone says why; the backend session is deleted.
    /// Returns whether it was live.
    pub async fn end(
        &self,
        pool: &Pool,
        id: &str,
        reason: GoneReason,
        label: &str,
        caller: &Caller,
    ) -> Result<bool, GatewayError> {
        self.publish_ended(id);
        let Some(record) = self.store.end(id, reason).await? else {
            return Ok(false);
        };
        self.count_ended(pool, label);
        self.audit_session("session.closed", pool, &record, |r| r.reason(label));
        self.delete_upstream(pool, &record, caller).await;
        Ok(true)
    }

    pub(super) fn count_ended(&self, pool: &Pool, label: &str) {
        self.metrics
            .sessions_ended
            .with_label_values(&[&pool.name, label])
            .inc();
    }

    /// Ends every session whose time-to-live ran out, deleting their backend sessions; returns
    /// how many.
    pub async fn expire(&self, pools: &[Arc<Pool>]) -> Result<usize, GatewayError> {
        let mut ended = 0;
        loop {
            let batch = self.store.take_expired(now_ms(), EXPIRY_BATCH).await?;
            for record in &batch {
                self.publish_ended(&record.id);
                let Some(pool) = pools.iter().find(|p| *p.name == *record.pool) else {
                    continue;
                };
                self.count_ended(pool, "expired");
                self.audit_session("session.closed", pool, record, |r| r.reason("expired"));
                // made for nobody: no client asked (a pool that exchanges callers' tokens has
                // none to send, and the backend expires the session itself)
                self.delete_upstream(pool, record, &Caller::default()).await;
            }
            ended += batch.len();
            if batch.len() < EXPIRY_BATCH {
                return Ok(ended);
            }
        }
    }

    /// Best-effort DELETE of the record's backend session, made for `caller`.
    pub(super) async fn delete_upstream(&self, pool: &Pool, rec: &SessionRecord, caller: &Caller) {
        let Some(b) = pool.find(rec.binding.backend) else {
            return;
        };
        let sid = &rec.binding.backend_session;
        let version = Some(&*rec.protocol_version);
        self.engine
            .delete_session(pool, &b, &rec.path, sid, version, caller)
            .await;
    }
}
