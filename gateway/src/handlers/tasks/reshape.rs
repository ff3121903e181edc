//! What a task's answer goes through on its way to the client (`forward::relay::Reshape`),
//! each bounded: [`Held`], a pinned request's answer held (at most [`HELD_LIMIT`]) while it may
//! be the pod's "unknown task", then -32038 `forgotten` in its place or the pod's answer as it
//! came, as on the fast path (`fast.rs`); [`StandIn`], another principal's task answered with
//! the stand-in id the request went with replaced by the client's task id as the answer
//! streams (a window of the stand-in's length is kept back between chunks).

use crate::error::GatewayError;
use crate::forward::relay::{rewritten_body, Reshape};
use crate::tasks::errors::Lost;
use bytes::{Bytes, BytesMut};
use mcp_wire::RequestId;
use pingora::http::ResponseHeader;

/// The most of a pinned task answer held back to see whether it is the pod's "unknown task"
/// (an error of a few hundred bytes): past it the answer streams on.
pub(crate) const HELD_LIMIT: usize = 64 * 1024;

/// What a held answer turned out to be.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Verdict {
    /// Not held (not a 200 JSON or SSE answer, or past [`HELD_LIMIT`]): passed as it came.
    Passed,
    /// The pod answered for the task (`ended`: with its end), `answer` whole.
    Answered {
        /// The task ended in this answer.
        ended: bool,
        /// The whole answer.
        answer: Bytes,
    },
    /// The pod does not know the task: -32038 `forgotten` was written in its place.
    Forgotten,
}

/// A pinned task answer, held while it may be the pod's "unknown task".
pub(crate) struct Held {
    task_id: String,
    pool: String,
    id: RequestId,
    sse: bool,
    held: Option<BytesMut>,
    /// What the answer turned out to be, once it ended.
    pub(crate) verdict: Verdict,
}

impl Held {
    /// The answer of a request for `task_id` of `pool`, whose id is `id`.
    pub(crate) fn new(task_id: &str, pool: &str, id: RequestId) -> Held {
        Held {
            task_id: task_id.to_owned(),
            pool: pool.to_owned(),
            id,
            sse: false,
            held: None,
            verdict: Verdict::Passed,
        }
    }
}

impl Reshape for Held {
    /// A 200 answer (JSON, or an event stream: the SDKs answer a `tasks/get` with one event) is
    /// held back (sent chunked: its length may change); anything else passes.
    fn head(&mut self, head: &mut ResponseHeader) {
        let content_type = head
            .headers
            .get(http::header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok());
        let sse = mcp_wire::sse::is_event_stream(content_type);
        let json = content_type.is_some_and(|c| c.trim_start().starts_with("application/json"));
        if head.status.as_u16() != 200 || !(json || sse) {
            return;
        }
        rewritten_body(head);
        self.held = Some(BytesMut::new());
        self.sse = sse;
    }

    fn chunk(&mut self, chunk: Bytes) -> Option<Bytes> {
        let Some(held) = self.held.as_mut() else {
            return Some(chunk);
        };
        held.extend_from_slice(&chunk);
        if held.len() <= HELD_LIMIT {
            return None;
        }
        self.held.take().map(BytesMut::freeze)
    }

    fn end(&mut self) -> Option<Bytes> {
        let answer = self.held.take()?.freeze();
        if crate::tasks::says_unknown(self.sse, &answer, &self.task_id) {
            self.verdict = Verdict::Forgotten;
            let err = GatewayError::task_lost(&self.pool, &self.task_id, Lost::Forgotten);
            return Some(match self.sse {
                true => err.event(&self.id),
                false => err.to_http(&self.id).2,
            });
        }
        let ended = mcp_wire::tasks::ended_in_answer(self.sse, &answer);
        self.verdict = Verdict::Answered {
            ended,
            answer: answer.clone(),
        };
        Some(answer)
    }
}

/// An answer to a request sent with a stand-in task id: every stand-in put back as the
/// client's task id (JSON-escaped, as it stood in the client's body), as the answer streams.
pub(crate) struct StandIn {
    from: Vec<u8>,
    to: Vec<u8>,
    /// The end of what came, kept back: it may be the start of a stand-in cut by a chunk.
    kept: BytesMut,
}

impl StandIn {
    /// Puts `task_id` back where the answer says `stand_in`.
    pub(crate) fn new(stand_in: &str, task_id: &str) -> StandIn {
        let escaped = serde_json::to_string(task_id).unwrap_or_default();
        StandIn {
            from: stand_in.as_bytes().to_vec(),
            to: escaped.trim_matches('"').as_bytes().to_vec(),
            kept: BytesMut::new(),
        }
    }
}

impl Reshape for StandIn {
    /// The answer's length changes: it is sent chunked.
    fn head(&mut self, head: &mut ResponseHeader) {
        rewritten_body(head);
    }

    fn chunk(&mut self, chunk: Bytes) -> Option<Bytes> {
        self.kept.extend_from_slice(&chunk);
        let replaced = replace_all(&self.kept, &self.from, &self.to);
        // a stand-in cut by the chunk's end is whole in what comes next
        let keep = (self.from.len() - 1).min(replaced.len());
        let mut replaced = BytesMut::from(&replaced[..]);
        self.kept = replaced.split_off(replaced.len() - keep);
        (!replaced.is_empty()).then(|| replaced.freeze())
    }

    fn end(&mut self) -> Option<Bytes> {
        let rest = std::mem::take(&mut self.kept);
        (!rest.is_empty()).then(|| rest.freeze())
    }
}

/// `haystack` with every `from` replaced by `to`.
fn replace_all(haystack: &[u8], from: &[u8], to: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(haystack.len());
    let mut rest = haystack;
    while let Some(at) = memchr::memmem::find(rest, from) {
        out.extend_from_slice(&rest[..at]);
        out.extend_from_slice(to);
        rest = &rest[at + from.len()..];
    }
    out.extend_from_slice(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_stand_in_is_put_back() {
        let out = replace_all(b"a XY b XY", b"XY", b"t\\\"1");
        assert_eq!(out, b"a t\\\"1 b t\\\"1");
    }

    #[test]
    fn a_stand_in_cut_by_chunks_is_put_back_whole() {
        let answer = br#"{"error":{"message":"unknown task: gw-unknown-abc"}}"#;
        for cut in 1..answer.len() {
            let mut s = StandIn::new("gw-unknown-abc", "t\"1");
            let mut out = Vec::new();
            for piece in [&answer[..cut], &answer[cut..]] {
                if let Some(b) = s.chunk(Bytes::copy_from_slice(piece)) {
                    out.extend_from_slice(&b);
                }
            }
            out.extend_from_slice(&s.end().unwrap_or_default());
            assert_eq!(
                out, br#"{"error":{"message":"unknown task: t\"1"}}"#,
                "cut at {cut}"
            );
        }
    }

    #[test]
    fn a_held_unknown_task_answer_becomes_task_lost_with_the_requests_id() {
        let mut head = ResponseHeader::build(200, None).unwrap();
        head.insert_header("content-type", "application/json")
            .unwrap();
        head.insert_header("content-length", "80").unwrap();
        let mut held = Held::new("t-1", "p", RequestId::from_json("9").unwrap());
        held.head(&mut head);
        assert!(head.headers.get("content-length").is_none(), "sent chunked");
        let unknown =
            br#"{"jsonrpc":"2.0","id":9,"error":{"code":-32602,"message":"unknown task: t-1"}}"#;
        assert_eq!(held.chunk(Bytes::from_static(unknown)), None);
        let out: serde_json::Value = serde_json::from_slice(&held.end().unwrap()).unwrap();
        assert_eq!(out["error"]["code"], -32038, "{out}");
        assert_eq!(out["error"]["data"]["reason"], "forgotten", "{out}");
        assert_eq!(out["id"], 9, "{out}");
        assert_eq!(held.verdict, Verdict::Forgotten);
    }

    #[test]
    fn a_held_answer_past_the_limit_streams_on() {
        let mut head = ResponseHeader::build(200, None).unwrap();
        head.insert_header("content-type", "application/json")
            .unwrap();
        let mut held = Held::new("t", "p", RequestId::null());
        held.head(&mut head);
        assert_eq!(held.chunk(Bytes::from_static(b"{")), None);
        let big = Bytes::from(vec![b' '; HELD_LIMIT]);
        assert_eq!(held.chunk(big).map(|b| b.len()), Some(HELD_LIMIT + 1));
        assert_eq!(
            held.chunk(Bytes::from_static(b"}")).as_deref(),
            Some(&b"}"[..])
        );
        assert_eq!(held.end(), None);
        assert_eq!(held.verdict, Verdict::Passed);
    }
}
