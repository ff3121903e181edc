//! The seam on the client's own session, and what each answer said, on every path: a pingora
//! downstream module that sees every response head and body chunk written to the client (the
//! fast path's relayed answer, and every answer of the paths the gateway drives, which
//! `downstream/answer.rs` writes through the same session: stateful, buffered, bridged,
//! virtual, SSE answers with or without resumption). It runs the request's seam
//! (`downstream/seam.rs`: the observers attached with [`observe`], a task handle's watch and
//! the cache's hearing among them) and feeds a 200 answer's JSON or SSE body to
//! [`mcp_wire::verdict::AnswerScan`]. `logging` then reads the verdict: a `tools/call` whose
//! result carries `isError: true` is outcome `tool-error`, a JSON-RPC error answered with HTTP
//! 200 is outcome `rpc-error` and is counted by its code in `mcpgw_rpc_errors_total`.
//!
//! Bodies with a content coding are not read (the verdict is then `ok`), and neither are
//! answers to requests without a method (a GET stream, a resume).

use crate::downstream::seam::{Body, Gate, Observer, Seam};
use crate::request::ctx::{Outcome, RequestCtx};
use async_trait::async_trait;
use bytes::Bytes;
use mcp_wire::verdict::{AnswerScan, Shape, Verdict};
use pingora::http::ResponseHeader;
use pingora::modules::http::{HttpModule, HttpModuleBuilder, HttpModules, Module};
use pingora::prelude::*;
use std::any::Any;

/// The per-request module: the request's seam, and the scan of the answer when it is one the
/// gateway reads.
#[derive(Default)]
pub struct AnswerVerdict {
    seam: Seam,
    scan: Option<AnswerScan>,
    /// The answer's `Content-Length`: a first chunk this long is the whole body.
    length: Option<usize>,
    /// What holds the answer back until it is checked (the seam's gate), if anything does.
    gate: Option<Box<dyn Gate>>,
}

/// Attaches `observer` to the answer of the request on `session` (the seam): it sees the head
/// and each body chunk as the client gets them, on the fast path and on every path the gateway
/// drives.
pub fn observe(session: &mut Session, observer: Box<dyn Observer>) {
    if let Some(m) = session.downstream_modules_ctx.get_mut::<AnswerVerdict>() {
        m.seam.attach(observer);
    }
}

/// Holds the answer of the request on `session` behind `gate` (the seam's gate: the writer
/// of every gateway-driven answer, `proxy/client.rs`, hands it the answer, `take_gate` and
/// back around each write).
pub fn gate(session: &mut Session, gate: Box<dyn Gate>) {
    if let Some(m) = session.downstream_modules_ctx.get_mut::<AnswerVerdict>() {
        m.gate = Some(gate);
    }
}

/// The gate of the request on `session`, taken out for one write (see [`gate`]).
pub fn take_gate(session: &mut Session) -> Option<Box<dyn Gate>> {
    session
        .downstream_modules_ctx
        .get_mut::<AnswerVerdict>()?
        .gate
        .take()
}

/// What a 200 answer's head says of its body: its shape (JSON or an event stream) and its
/// `Content-Length`; `None` for a body the verdict does not read (the seam's one reading of a
/// head: `downstream/seam.rs` `Body::read`).
fn read_head(headers: &http::HeaderMap) -> Option<(Shape, Option<usize>)> {
    match Body::read(headers) {
        (Body::Json, length) => Some((Shape::Json, length)),
        (Body::Events, length) => Some((Shape::Sse, length)),
        (Body::Other, _) => None,
    }
}

#[async_trait]
impl HttpModule for AnswerVerdict {
    async fn response_header_filter(
        &mut self,
        resp: &mut ResponseHeader,
        end_of_stream: bool,
    ) -> Result<()> {
        self.scan = None;
        self.length = None;
        let read = (resp.status.as_u16() == 200 && !end_of_stream)
            .then(|| read_head(&resp.headers))
            .flatten();
        if !self.seam.is_empty() {
            let body = match read {
                Some((Shape::Json, _)) => Body::Json,
                Some((Shape::Sse, _)) => Body::Events,
                None => Body::Other,
            };
            self.seam.head(resp, body);
            if end_of_stream {
                self.seam.chunk(&[], true);
            }
        }
        let Some((shape, length)) = read else {
            return Ok(());
        };
        self.length = length;
        self.scan = Some(AnswerScan::new(shape));
        Ok(())
    }

    fn response_body_filter(&mut self, body: &mut Option<Bytes>, end: bool) -> Result<()> {
        if let (Some(scan), Some(chunk)) = (self.scan.as_mut(), body.as_ref()) {
            if self.length.take() == Some(chunk.len()) {
                scan.push_whole(chunk);
            } else {
                scan.push(chunk);
            }
        }
        // the answer is whole when it ends, or (SSE) when its response message has passed
        if !self.seam.is_empty() {
            let whole = end || self.scan.as_ref().is_some_and(|s| s.verdict().is_some());
            self.seam.chunk(body.as_deref().unwrap_or_default(), whole);
        }
        Ok(())
    }

    fn as_any(&self) -> &dyn Any {
        self
    }

    fn as_any_mut(&mut self) -> &mut dyn Any {
        self
    }
}

struct Builder;

impl HttpModuleBuilder for Builder {
    fn init(&self) -> Module {
        Box::<AnswerVerdict>::default()
    }
}

/// Adds the module to pingora's downstream modules.
pub fn install(modules: &mut HttpModules) {
    modules.add_module(Box::new(Builder));
}

/// The `outcome` label of a finished request, the answer's verdict included: `tool-error`
/// and `rpc-error` for a forwarded 200 answer that said so, else [`Outcome::label`]. The
/// second value is the JSON-RPC error's `code` label, for `mcpgw_rpc_errors_total`.
pub fn outcome(
    session: &Session,
    ctx: &RequestCtx,
    status: Option<u16>,
) -> (&'static str, Option<String>) {
    let plain = ctx.outcome.label(status);
    // A client that leaves after the whole response message reached it (an SSE answer's
    // stream it closes once it has the result) got its answer: the verdict counts.
    let forwarded = matches!(ctx.outcome, Outcome::Forwarded | Outcome::ClientGone);
    if !forwarded
        || status != Some(200)
        || ctx.method_label == "none"
        || ctx.method_label.starts_with("notifications/")
    {
        return (plain, None);
    }
    let verdict = session
        .downstream_modules_ctx
        .get::<AnswerVerdict>()
        .and_then(|m| m.scan.as_ref())
        .and_then(AnswerScan::verdict);
    match verdict {
        Some(Verdict::ToolError) if ctx.method_label == "tools/call" => ("tool-error", None),
        Some(Verdict::RpcError(code)) => ("rpc-error", Some(Verdict::code_label(code))),
        Some(_) if ctx.outcome == Outcome::ClientGone => ("ok", None),
        _ => (plain, None),
    }
}

/// The JSON-RPC error code the answer carried, when the verdict read one (`None` for a
/// result, an answer not read, or an error without an integer code).
pub fn rpc_code(session: &Session) -> Option<i64> {
    let verdict = session
        .downstream_modules_ctx
        .get::<AnswerVerdict>()
        .and_then(|m| m.scan.as_ref())
        .and_then(AnswerScan::verdict);
    match verdict {
        Some(Verdict::RpcError(code)) => code,
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn head(pairs: &[(&'static str, &'static str)]) -> Option<(Shape, Option<usize>)> {
        let mut m = http::HeaderMap::new();
        for (k, v) in pairs {
            m.append(*k, http::HeaderValue::from_static(v));
        }
        read_head(&m)
    }

    #[test]
    fn an_answer_head_says_its_shape_and_length() {
        let json = ("content-type", "application/json");
        let sse = ("content-type", "text/event-stream");
        assert_eq!(head(&[json]), Some((Shape::Json, None)));
        assert_eq!(
            head(&[("date", "x"), sse, ("content-length", "12")]),
            Some((Shape::Sse, Some(12)))
        );
        assert_eq!(
            head(&[json, ("content-encoding", "IDENTITY")]),
            Some((Shape::Json, None))
        );
        // not read: coded, another type, no type
        assert_eq!(head(&[json, ("content-encoding", "gzip")]), None);
        assert_eq!(head(&[("content-type", "text/plain")]), None);
        assert_eq!(head(&[("content-length", "3")]), None);
        // the first of each, as a lookup finds it
        assert_eq!(
            head(&[
                json,
                ("content-type", "text/plain"),
                ("content-length", "7"),
                ("content-length", "9")
            ]),
            Some((Shape::Json, Some(7)))
        );
        assert_eq!(
            head(&[json, ("content-length", "x")]),
            Some((Shape::Json, None))
        );
    }
}
