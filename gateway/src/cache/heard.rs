//! What the cache hears on the answers it passes: an [`Observer`] of the one seam
//! (`downstream/seam.rs`) that reads an event stream's events ([`Changes`]) and drops the
//! cached results of the pool that sent it when one says they changed. The fast path and the
//! gateway-driven relay attach the same observer, so a change is heard however the answer
//! went.

use super::changes::Changes;
use super::Cache;
use crate::downstream::seam::Observer;
use pingora::http::ResponseHeader;
use std::sync::Arc;

/// Hears changes on one answer from the pool `scope`.
pub struct Heard {
    cache: Arc<Cache>,
    scope: Arc<str>,
    /// The reading, once the head said the answer is an event stream.
    changes: Option<Changes>,
}

impl Heard {
    /// An observer for an answer of the pool `scope` with the head `head`, or `None` when
    /// there is nothing to hear: the cache is off, or the answer is no event stream (only a
    /// stream carries notifications), so most answers cost no observer at all.
    pub fn new(cache: &Arc<Cache>, scope: &str, head: &ResponseHeader) -> Option<Box<Heard>> {
        (cache.config().enabled && is_event_stream(head)).then(|| {
            Box::new(Heard {
                cache: cache.clone(),
                scope: scope.into(),
                changes: None,
            })
        })
    }
}

impl Observer for Heard {
    fn head(&mut self, head: &ResponseHeader) {
        self.changes = is_event_stream(head).then(|| Changes::of(&head.headers));
    }

    fn chunk(&mut self, chunk: &[u8], _whole: bool) {
        if self.changes.as_mut().is_some_and(|c| c.scan(chunk)) {
            self.cache.changed(&self.scope);
        }
    }
}

/// Whether `head` says its body is an event stream.
fn is_event_stream(head: &ResponseHeader) -> bool {
    let content_type = head.headers.get(http::header::CONTENT_TYPE);
    mcp_wire::sse::is_event_stream(content_type.and_then(|v| v.to_str().ok()))
}
