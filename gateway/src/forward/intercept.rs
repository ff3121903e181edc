//! A route's interceptor chain (`interceptors/`, SEP-2624) on the one way through, for every
//! path the gateway drives (a route with a chain never takes the fast path: `proxy/steps.rs`):
//! - the request phase ([`request`]): called by each handler once its request is read and
//!   classified (authorized, charged), on the body the backend will get; a mutator's params
//!   replace the request's, a denial answers the client and nothing is sent;
//! - the response phase ([`AnswerGate`]): armed on the client by [`request`] where the chain
//!   hooks the answer, so it holds whatever writes the answer (a relayed backend answer, a
//!   session's, either bridge's, a virtual server's merged list, the cache's). A JSON answer
//!   is held whole (bounded) and its `result` checked before the client gets it; on an event
//!   stream, each response message is held until the chain has run and every other event (a
//!   progress notification, a server's request) passes at once.

use crate::downstream::client::Client;
use crate::downstream::seam::{Body, Gate, Write};
use crate::error::GatewayError;
use crate::interceptors::{Chain, Context, Interceptors, Phase, Verdict};
use crate::request::ctx::RequestCtx;
use crate::routing::Route;
use bytes::{Bytes, BytesMut};
use mcp_wire::RequestId;
use pingora::http::ResponseHeader;
use serde_json::Value;
use std::sync::Arc;

/// The largest answer (a JSON body, or one event of a stream) the gate holds for the chain; a
/// larger one is refused (fail closed), never passed on unchecked.
const ANSWER_LIMIT: usize = 16 * 1024 * 1024;

/// Runs `route`'s request-phase chain on `body` (a request of `method`, read and classified),
/// and arms the response phase on `client` when the chain hooks the answer. `Some`: the
/// request with a mutator's params, to send in the place of `body`. `session`: the gateway
/// session the request belongs to, if any (hashed for the interceptors).
pub(crate) async fn request(
    client: &mut impl Client,
    ctx: &RequestCtx,
    route: &Route,
    method: Option<&str>,
    session: Option<&str>,
    body: &Bytes,
) -> Result<Option<Bytes>, GatewayError> {
    let (chain, Some(method)) = (&route.chain, method) else {
        return Ok(None);
    };
    if chain.is_empty() {
        return Ok(None);
    }
    let interceptors = &ctx.state.interceptors;
    let cx = Context {
        principal: ctx.principal.clone(),
        session: session.map(crate::session_hash::hash_session),
        trace_id: ctx.trace_id.clone(),
    };
    if interceptors.hooks(chain, method, Phase::Response) {
        let gate = AnswerGate::new(interceptors.clone(), chain.clone(), method, cx.clone());
        client.gate(Box::new(gate));
    }
    if !interceptors.hooks(chain, method, Phase::Request) {
        return Ok(None);
    }
    let mut msg: Value =
        serde_json::from_slice(body).map_err(|e| GatewayError::parse_error(&e.to_string()))?;
    let Some(fields) = msg.as_object_mut() else {
        return Ok(None);
    };
    let params = fields.get("params").cloned().unwrap_or(Value::Null);
    let verdict = interceptors.run(chain, method, Phase::Request, &params, &cx);
    match verdict.await? {
        Verdict::Pass => Ok(None),
        Verdict::Changed(params) => {
            fields.insert("params".into(), params);
            let bytes = serde_json::to_vec(&msg).map_err(|e| GatewayError::internal(e.to_string()));
            Ok(Some(Bytes::from(bytes?)))
        }
    }
}

/// The response phase of a route's chain, holding one answer (see the module's docs).
pub(crate) struct AnswerGate {
    interceptors: Arc<Interceptors>,
    chain: Chain,
    event: String,
    cx: Context,
    state: Held,
}

/// What the gate holds.
enum Held {
    /// No head yet.
    Waiting,
    /// A JSON answer (or one in a content coding), held whole until it ends.
    Whole(Box<ResponseHeader>, BytesMut),
    /// An event stream: the head is written, each whole event passes or is checked; the
    /// bytes of an event not yet whole are counted (bounded).
    Events(mcp_wire::sse::EventSplitter, usize),
    /// Nothing the chain reads (another status or media type): passed as it comes.
    Through,
}

impl AnswerGate {
    fn new(interceptors: Arc<Interceptors>, chain: Chain, event: &str, cx: Context) -> Self {
        AnswerGate {
            interceptors,
            chain,
            event: event.to_owned(),
            cx,
            state: Held::Waiting,
        }
    }

    /// The message with its `result` checked by the chain: `None` to pass the same bytes, else
    /// the message with the changed result, or the error that answers it in its place.
    /// Anything but a response with a result (an error, a notification, a server's request)
    /// passes as it is.
    async fn check(&self, json: &[u8]) -> Option<Bytes> {
        let message = serde_json::from_slice::<Response<'_>>(json).ok()?;
        let (id, result) = (message.id?, message.result?);
        let id_of = || RequestId::from_json(id.get()).unwrap_or_else(RequestId::null);
        // a result the chain cannot be shown is refused, never passed on unchecked
        let Ok(result) = serde_json::from_str::<Value>(result.get()) else {
            let why = "a result the gateway cannot read as JSON";
            return Some(GatewayError::answer_unchecked(why).body(&id_of()));
        };
        let verdict = self
            .interceptors
            .run(&self.chain, &self.event, Phase::Response, &result, &self.cx)
            .await;
        match verdict {
            Ok(Verdict::Pass) => None,
            Ok(Verdict::Changed(result)) => {
                let changed = Changed {
                    jsonrpc: "2.0",
                    id,
                    result,
                };
                serde_json::to_vec(&changed).ok().map(Bytes::from)
            }
            Err(e) => Some(e.body(&id_of())),
        }
    }

    /// A held whole answer, ended: decoded where it is compressed, its response checked.
    async fn release(&self, mut head: Box<ResponseHeader>, body: BytesMut) -> Vec<Write> {
        let mut body = body.freeze();
        let decoded =
            crate::upstream::encoding::decode_in_place(&mut head, &mut body, ANSWER_LIMIT);
        if decoded.is_err() {
            return refuse("an answer in a content coding the gateway cannot read");
        }
        let checked = if Body::read(&head.headers).0 == Body::Events {
            self.check_events(&body).await
        } else {
            self.check(&body).await
        };
        let Some(body) = checked else {
            let empty = body.is_empty();
            return vec![Write::Head(head, empty), Write::Body(Some(body), true)];
        };
        head.remove_header(&http::header::TRANSFER_ENCODING);
        let _ = head.insert_header(http::header::CONTENT_LENGTH, body.len().to_string());
        vec![Write::Head(head, false), Write::Body(Some(body), true)]
    }

    /// A whole event stream (decoded from a content coding): each event checked; `None` when
    /// none changed.
    async fn check_events(&self, body: &Bytes) -> Option<Bytes> {
        let mut splitter = mcp_wire::sse::EventSplitter::default();
        let mut events = splitter.push(body);
        events.extend(splitter.push(b"\n\n"));
        let mut out = BytesMut::new();
        let mut changed = false;
        for event in events {
            let checked = self.check_event(&event).await;
            changed |= checked.is_some();
            out.extend_from_slice(&checked.unwrap_or(event));
        }
        changed.then(|| out.freeze())
    }

    /// One whole event of a stream: `Some` when the chain changed or refused its message.
    async fn check_event(&self, event: &[u8]) -> Option<Bytes> {
        let data = mcp_wire::sse::messages(Some("text/event-stream"), event);
        let [json] = data.as_slice() else {
            return None;
        };
        let checked = self.check(json).await?;
        Some(replace_data(event, &checked))
    }

    /// Holds a whole answer from `head` on.
    fn hold(&mut self, head: Box<ResponseHeader>) -> Option<(Box<ResponseHeader>, bool)> {
        self.state = Held::Whole(head, BytesMut::new());
        None
    }

    /// The events a chunk of a stream completes, each passed or checked.
    async fn events(&mut self, body: Option<Bytes>, end: bool) -> Vec<Write> {
        let Held::Events(splitter, pending) = &mut self.state else {
            return vec![Write::Body(body, end)];
        };
        let chunk = body.unwrap_or_default();
        let events = splitter.push(&chunk);
        *pending += chunk.len();
        *pending -= events.iter().map(Bytes::len).sum::<usize>().min(*pending);
        if *pending > ANSWER_LIMIT {
            self.state = Held::Through;
            let err = GatewayError::answer_unchecked("an event larger than the gateway checks");
            return vec![Write::Body(Some(err.event(&RequestId::null())), true)];
        }
        let mut out = Vec::with_capacity(events.len() + 1);
        for event in events {
            let checked = self.check_event(&event).await;
            out.push(Write::Body(Some(checked.unwrap_or(event)), false));
        }
        if end {
            out.push(Write::Body(None, true));
        }
        out
    }
}

/// An answer refused whole (fail closed), before the client got anything of it.
fn refuse(why: &str) -> Vec<Write> {
    let body = GatewayError::answer_unchecked(why).body(&RequestId::null());
    match json_head(body.len()) {
        Some(head) => vec![Write::Head(head, false), Write::Body(Some(body), true)],
        None => vec![Write::Body(None, true)],
    }
}

/// `event` with its data replaced by `json` (its other lines, its `id:` among them, kept: a
/// client resumes after it).
fn replace_data(event: &[u8], json: &[u8]) -> Bytes {
    let mut out = BytesMut::with_capacity(event.len() + json.len());
    let mut data = false;
    for line in mcp_wire::sse::lines(event) {
        if line.is_empty() {
            continue;
        }
        if mcp_wire::sse::field(line).0 == b"data" {
            if !std::mem::replace(&mut data, true) {
                out.extend_from_slice(b"data: ");
                out.extend_from_slice(json);
                out.extend_from_slice(b"\r\n");
            }
            continue;
        }
        out.extend_from_slice(line);
        out.extend_from_slice(b"\r\n");
    }
    out.extend_from_slice(b"\r\n");
    out.freeze()
}

/// A response message as the gate reads it: its id and result kept verbatim (a 23-digit id
/// must not become a float).
#[derive(serde::Deserialize)]
struct Response<'a> {
    #[serde(borrow)]
    id: Option<&'a serde_json::value::RawValue>,
    #[serde(borrow)]
    result: Option<&'a serde_json::value::RawValue>,
}

/// A response message with its result changed by a mutator, its id as the backend sent it.
#[derive(serde::Serialize)]
struct Changed<'a> {
    jsonrpc: &'static str,
    id: &'a serde_json::value::RawValue,
    result: Value,
}

/// A `200` JSON head for a body of `len` bytes.
fn json_head(len: usize) -> Option<Box<ResponseHeader>> {
    let mut h = ResponseHeader::build(200, Some(2)).ok()?;
    h.insert_header(http::header::CONTENT_TYPE, "application/json")
        .ok()?;
    h.insert_header(http::header::CONTENT_LENGTH, len).ok()?;
    Some(Box::new(h))
}

#[async_trait::async_trait]
impl Gate for AnswerGate {
    fn head(
        &mut self,
        mut head: Box<ResponseHeader>,
        end: bool,
    ) -> Option<(Box<ResponseHeader>, bool)> {
        // (an answer in a content coding reads as `Other`: held, and read once decoded)
        let encoded = head.headers.contains_key(http::header::CONTENT_ENCODING);
        let body = Body::read(&head.headers).0;
        self.state = match body {
            _ if head.status != 200 || end => Held::Through,
            Body::Events => {
                crate::forward::relay::rewritten_body(&mut head);
                Held::Events(Default::default(), 0)
            }
            Body::Json => return self.hold(head),
            Body::Other if encoded => return self.hold(head),
            Body::Other => Held::Through,
        };
        Some((head, end))
    }

    async fn chunk(&mut self, body: Option<Bytes>, end: bool) -> Vec<Write> {
        let Held::Whole(_, held) = &mut self.state else {
            return self.events(body, end).await;
        };
        if let Some(chunk) = &body {
            if held.len() + chunk.len() > ANSWER_LIMIT {
                self.state = Held::Through;
                return refuse("an answer larger than the gateway checks");
            }
            held.extend_from_slice(chunk);
        }
        if !end {
            return Vec::new();
        }
        match std::mem::replace(&mut self.state, Held::Through) {
            Held::Whole(head, held) => self.release(head, held).await,
            _ => Vec::new(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_event_whose_message_changed_keeps_its_id_and_name() {
        let event = b"id: 7\r\nevent: message\r\ndata: {\"a\":\r\ndata: 1}\r\n\r\n";
        let out = replace_data(event, br#"{"a":2}"#);
        assert_eq!(
            &out[..],
            &b"id: 7\r\nevent: message\r\ndata: {\"a\":2}\r\n\r\n"[..]
        );
        // it is still one event: the client reads the new message from it
        let messages = mcp_wire::sse::messages(Some("text/event-stream"), &out);
        assert_eq!(messages, vec![br#"{"a":2}"#.to_vec()]);
    }

    #[test]
    fn a_response_is_read_with_its_id_verbatim() {
        let json = br#"{"jsonrpc":"2.0","id":123456789012345678901,"result":{"a":1e400}}"#;
        let read = serde_json::from_slice::<Response<'_>>(json).ok();
        let id = read.as_ref().and_then(|r| r.id).map(|id| id.get());
        assert_eq!(id, Some("123456789012345678901"));
        let notification = br#"{"jsonrpc":"2.0","method":"notifications/progress"}"#;
        let read = serde_json::from_slice::<Response<'_>>(notification).ok();
        assert!(read.is_some_and(|r| r.id.is_none() && r.result.is_none()));
    }
}
