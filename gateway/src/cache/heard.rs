//! What the cache hears on the answers it passes: an [`Observer`] of the one seam
//! (`downstream/seam.rs`) that reads an event stream's events ([`Changes`]) and drops the
//! cached results of the pool that sent it when one says they changed. The fast path and the
//! gateway-driven relay attach the same observer, so a change is heard however the answer
//! went.

use super::changes::Changes;
use super::Cache;
use crate::downstream::seam::{Body, Observer};
use crate::upstream::Pool;
use pingora::http::ResponseHeader;
use std::sync::Arc;

/// Hears changes on one event stream from `pool` (its name is the scope dropped).
pub struct Heard {
    cache: Arc<Cache>,
    pool: Arc<Pool>,
    /// The reading, from the head on (its content coding decoded for the reading).
    changes: Option<Changes>,
}

impl Heard {
    /// An observer for an answer of `pool` with the head `head`, or `None` when there is
    /// nothing to hear: the cache is off, or the answer is no event stream (only a stream
    /// carries notifications), so most answers cost no observer at all.
    pub fn new(cache: &Arc<Cache>, pool: &Arc<Pool>, head: &ResponseHeader) -> Option<Box<Heard>> {
        let content_type = head.headers.get(http::header::CONTENT_TYPE);
        let events = mcp_wire::sse::is_event_stream(content_type.and_then(|v| v.to_str().ok()));
        (cache.config().enabled && events).then(|| {
            Box::new(Heard {
                cache: cache.clone(),
                pool: pool.clone(),
                changes: None,
            })
        })
    }
}

impl Observer for Heard {
    fn head(&mut self, head: &ResponseHeader, _body: Body) {
        // made for an event stream (`new`), in whatever coding: decoded for the reading
        self.changes = Some(Changes::of(&head.headers));
    }

    fn chunk(&mut self, chunk: &[u8], _whole: bool) {
        if self.changes.as_mut().is_some_and(|c| c.scan(chunk)) {
            self.cache.changed(&self.pool.name);
        }
    }
}
