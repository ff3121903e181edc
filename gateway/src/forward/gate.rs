//! The response phase of a route's interceptor chain ([`AnswerGate`], armed by
//! `forward/intercept.rs`): a gate on the client's writer (`downstream/seam.rs` `Gate`), so it
//! holds whatever writes the answer (a relayed backend answer, a session's, either bridge's, a
//! virtual server's merged list, the cache's). A JSON answer is held whole (bounded) and its
//! `result` checked before the client gets it; on an event stream, each response message is
//! held until the chain has run and every other event (a progress notification, a server's
//! request) passes at once. What it cannot read is refused (-32055), never passed on unchecked.

use crate::downstream::seam::{Gate, Write};
use crate::error::GatewayError;
use crate::interceptors::{Chain, Context, Interceptors, Phase, Verdict};
use crate::request::ctx::RequestCtx;
use bytes::{Bytes, BytesMut};
use mcp_wire::RequestId;
use pingora::http::ResponseHeader;
use serde_json::Value;
use std::sync::Arc;

/// The largest answer (a JSON body, or one event of a stream) the gate holds for the chain; a
/// larger one is refused (fail closed), never passed on unchecked.
const ANSWER_LIMIT: usize = 16 * 1024 * 1024;

/// The response phase of a route's chain, holding one answer (see the module's docs).
pub(crate) struct AnswerGate {
    interceptors: Arc<Interceptors>,
    chain: Chain,
    /// The event (the request's method); `None`: a session's stream (a GET), where an answer
    /// cannot be checked (a resumed one's request is not known) and none passes.
    event: Option<String>,
    /// The request's id: the one response that passes.
    id: Option<Value>,
    cx: Context,
    /// The request's response has passed: no other does.
    answered: bool,
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
    /// Nothing the chain reads (not a success, or no body): passed as it comes.
    Through,
    /// A success the gate cannot read (an unknown or twice-given media type): refused when its
    /// body comes.
    Unreadable(&'static str),
    /// Refused or ended: nothing more is written.
    Done,
}

/// What the gate makes of one message.
enum Checked {
    /// The same bytes go on.
    Pass,
    /// These go in its place (a changed result, or the error that answers instead).
    Replace(Bytes),
    /// Left out (a response to another request, or a second one).
    Drop,
}

/// A message as the gate reads it: its id, result and error kept verbatim (a 23-digit id must
/// not become a float); a key given twice makes it unreadable (clients disagree on which
/// counts), and so is refused.
#[derive(serde::Deserialize)]
struct Message<'a> {
    #[serde(borrow)]
    id: Option<&'a serde_json::value::RawValue>,
    #[serde(borrow)]
    result: Option<&'a serde_json::value::RawValue>,
    #[serde(borrow)]
    error: Option<&'a serde_json::value::RawValue>,
    #[serde(borrow)]
    method: Option<&'a serde_json::value::RawValue>,
}

/// A response message with its result changed by a mutator, its id as the backend sent it.
#[derive(serde::Serialize)]
struct Changed<'a> {
    jsonrpc: &'static str,
    id: &'a serde_json::value::RawValue,
    result: Value,
}

impl AnswerGate {
    pub(super) fn new(
        interceptors: Arc<Interceptors>,
        chain: Chain,
        ctx: &RequestCtx,
        event: Option<&str>,
        cx: Context,
    ) -> Self {
        let id = ctx.request_id.as_ref();
        AnswerGate {
            interceptors,
            chain,
            event: event.map(str::to_owned),
            id: id.and_then(|id| serde_json::from_str(id.as_json()).ok()),
            cx,
            answered: false,
            state: Held::Waiting,
        }
    }

    /// The error that answers in the place of what cannot be checked (`why`).
    fn unchecked(&self, why: &str, id: Option<&serde_json::value::RawValue>) -> Bytes {
        let id = id.and_then(|id| RequestId::from_json(id.get()));
        let id = id.or_else(|| {
            self.id
                .as_ref()
                .and_then(|id| RequestId::from_json(&id.to_string()))
        });
        GatewayError::answer_unchecked(why).body(&id.unwrap_or_else(RequestId::null))
    }

    /// One message of the answer: a response to this request checked by the chain (once);
    /// any other response left out; a notification or a server's request passed; anything
    /// the gate cannot read refused.
    async fn check(&mut self, json: &[u8]) -> Checked {
        let Ok(message) = serde_json::from_slice::<Message<'_>>(json) else {
            return Checked::Replace(
                self.unchecked("an answer that is not one JSON-RPC message", None),
            );
        };
        if message.method.is_some() {
            return Checked::Pass;
        }
        if message.result.is_none() && message.error.is_none() {
            return Checked::Replace(
                self.unchecked("an answer that is not one JSON-RPC message", None),
            );
        }
        let Some(event) = self.event.clone() else {
            let why =
                "an answer on a session's stream, which the route's interceptors cannot check";
            return Checked::Replace(self.unchecked(why, message.id));
        };
        let id: Option<Value> = message
            .id
            .and_then(|id| serde_json::from_str(id.get()).ok());
        let ours = id.is_none_or(|id| id.is_null() || Some(&id) == self.id.as_ref());
        if !ours || std::mem::replace(&mut self.answered, true) {
            return Checked::Drop;
        }
        let (Some(id), Some(result)) = (message.id, message.result) else {
            return Checked::Pass;
        };
        // a result the chain cannot be shown is refused, never passed on unchecked
        let Ok(result) = serde_json::from_str::<Value>(result.get()) else {
            return Checked::Replace(
                self.unchecked("a result the gateway cannot read as JSON", Some(id)),
            );
        };
        let verdict = self
            .interceptors
            .run(&self.chain, &event, Phase::Response, &result, &self.cx)
            .await;
        match verdict {
            Ok(Verdict::Pass) => Checked::Pass,
            Ok(Verdict::Changed(result)) => {
                let changed = Changed {
                    jsonrpc: "2.0",
                    id,
                    result,
                };
                match serde_json::to_vec(&changed) {
                    Ok(bytes) => Checked::Replace(Bytes::from(bytes)),
                    Err(_) => Checked::Replace(self.unchecked("a changed result", Some(id))),
                }
            }
            Err(e) => {
                let id = RequestId::from_json(id.get()).unwrap_or_else(RequestId::null);
                Checked::Replace(e.body(&id))
            }
        }
    }

    /// A held whole answer, ended: decoded where it is compressed, its messages checked.
    async fn release(&mut self, mut head: Box<ResponseHeader>, body: BytesMut) -> Vec<Write> {
        let mut body = body.freeze();
        let decoded =
            crate::upstream::encoding::decode_in_place(&mut head, &mut body, ANSWER_LIMIT);
        if decoded.is_err() {
            return self.refuse("an answer in a content coding the gateway cannot read");
        }
        let body = match media(&head) {
            Ok(Media::Events) => self.check_events(&body).await,
            Ok(Media::Json) => match self.check(&body).await {
                Checked::Pass => None,
                Checked::Replace(b) => Some(b),
                Checked::Drop => Some(self.unchecked("an answer to another request", None)),
            },
            Err(why) => return self.refuse(why),
        }
        .unwrap_or(body);
        head.remove_header(&http::header::TRANSFER_ENCODING);
        let _ = head.insert_header(http::header::CONTENT_LENGTH, body.len().to_string());
        vec![
            Write::Head(head, body.is_empty()),
            Write::Body(Some(body), true),
        ]
    }

    /// A whole event stream (decoded from a content coding): each event checked; `None` when
    /// none changed.
    async fn check_events(&mut self, body: &Bytes) -> Option<Bytes> {
        let mut splitter = mcp_wire::sse::EventSplitter::default();
        let mut events = splitter.push(body);
        events.extend(splitter.push(b"\n\n"));
        let mut out = BytesMut::new();
        let mut changed = false;
        for event in events {
            match self.check_event(&event).await {
                Checked::Pass => out.extend_from_slice(&event),
                Checked::Replace(b) => {
                    changed = true;
                    out.extend_from_slice(&b);
                }
                Checked::Drop => changed = true,
            }
        }
        changed.then(|| out.freeze())
    }

    /// One whole event of a stream: an event without data (a priming event, a comment)
    /// passes; its message checked otherwise.
    async fn check_event(&mut self, event: &[u8]) -> Checked {
        let data = mcp_wire::sse::messages(Some("text/event-stream"), event);
        let Some(json) = data.first() else {
            return Checked::Pass;
        };
        match self.check(json).await {
            Checked::Replace(checked) => Checked::Replace(replace_data(event, &checked)),
            other => other,
        }
    }

    /// The events a chunk of a stream completes, each passed or checked (at its end, what is
    /// left is read as a last event).
    async fn events(&mut self, body: Option<Bytes>, end: bool) -> Vec<Write> {
        let Held::Events(splitter, pending) = &mut self.state else {
            return vec![Write::Body(body, end)];
        };
        let chunk = body.unwrap_or_default();
        let mut events = splitter.push(&chunk);
        if end {
            events.extend(splitter.push(b"\n\n"));
        }
        *pending += chunk.len();
        *pending -= events.iter().map(Bytes::len).sum::<usize>().min(*pending);
        if *pending > ANSWER_LIMIT {
            self.state = Held::Done;
            let why = "an event larger than the gateway checks";
            return vec![Write::Body(
                Some(mcp_wire::sse::event(&self.unchecked(why, None))),
                true,
            )];
        }
        let mut out = Vec::with_capacity(events.len() + 1);
        for event in events {
            match self.check_event(&event).await {
                Checked::Pass => out.push(Write::Body(Some(event), false)),
                Checked::Replace(b) => out.push(Write::Body(Some(b), false)),
                Checked::Drop => {}
            }
        }
        if end {
            self.state = Held::Done;
            out.push(Write::Body(None, true));
        }
        out
    }

    /// The answer refused whole (fail closed), before the client got anything of it; nothing
    /// more is written after.
    fn refuse(&mut self, why: &str) -> Vec<Write> {
        self.state = Held::Done;
        let body = self.unchecked(why, None);
        match json_head(body.len()) {
            Some(head) => vec![Write::Head(head, false), Write::Body(Some(body), true)],
            None => vec![Write::Body(None, true)],
        }
    }
}

/// What a success's body is, as the gate reads it.
enum Media {
    Json,
    Events,
}

/// The media type of `head`, read as clients read it (case-insensitively, `event-stream`
/// before `json` wherever they appear); an answer that names none, or names one twice, cannot
/// be read.
fn media(head: &ResponseHeader) -> Result<Media, &'static str> {
    let mut types = head.headers.get_all(http::header::CONTENT_TYPE).iter();
    let (Some(first), None) = (types.next(), types.next()) else {
        return Err("an answer whose media type is missing or given twice");
    };
    let first = first.to_str().unwrap_or_default().to_ascii_lowercase();
    if first.contains("event-stream") {
        Ok(Media::Events)
    } else if first.contains("json") {
        Ok(Media::Json)
    } else {
        Err("an answer in a media type the gateway cannot read")
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
        let status = head.status.as_u16();
        // a success with a body is read (any 2xx: clients read them all), whatever it says
        // it is; an answer in a content coding is held and read once decoded
        if end || !(200..300).contains(&status) || status == 202 || status == 204 {
            self.state = Held::Through;
            return Some((head, end));
        }
        let encoded = head.headers.contains_key(http::header::CONTENT_ENCODING);
        self.state = match media(&head) {
            _ if encoded => Held::Whole(head, BytesMut::new()),
            Ok(Media::Json) => Held::Whole(head, BytesMut::new()),
            Ok(Media::Events) => {
                crate::forward::relay::rewritten_body(&mut head);
                self.state = Held::Events(Default::default(), 0);
                return Some((head, end));
            }
            Err(why) => Held::Unreadable(why),
        };
        None
    }

    async fn chunk(&mut self, body: Option<Bytes>, end: bool) -> Vec<Write> {
        match &mut self.state {
            Held::Waiting | Held::Through => vec![Write::Body(body, end)],
            Held::Done => Vec::new(),
            Held::Unreadable(why) => {
                let why = *why;
                self.refuse(why)
            }
            Held::Events(..) => self.events(body, end).await,
            Held::Whole(_, held) => {
                if let Some(chunk) = &body {
                    if held.len() + chunk.len() > ANSWER_LIMIT {
                        return self.refuse("an answer larger than the gateway checks");
                    }
                    held.extend_from_slice(chunk);
                }
                if !end {
                    return Vec::new();
                }
                match std::mem::replace(&mut self.state, Held::Done) {
                    Held::Whole(head, held) => self.release(head, held).await,
                    _ => Vec::new(),
                }
            }
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
        let read = serde_json::from_slice::<Message<'_>>(json).ok();
        let id = read.as_ref().and_then(|r| r.id).map(|id| id.get());
        assert_eq!(id, Some("123456789012345678901"));
        let notification = br#"{"jsonrpc":"2.0","method":"notifications/progress"}"#;
        let read = serde_json::from_slice::<Message<'_>>(notification).ok();
        assert!(read.is_some_and(|r| r.id.is_none() && r.result.is_none()));
    }
}
