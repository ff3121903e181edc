//! Legacy (2025-era) clients on a virtual route: one client session, one session per member.
//!
//! - The client's `initialize` is sent to every member's route (concurrently, as a subrequest
//!   each), which opens a session there exactly as a plain route of the member's mode does: a
//!   gateway session pinned to one backend pod (re-initialized on a surviving pod when that pod
//!   dies or forgets it, its settings replayed), the reverse bridge's for a 2026-07-28 member.
//!   The client gets the virtual server's own `InitializeResult` and, as its session id, the
//!   members' session ids sealed for its principal (`CursorSealer::seal_session`): nothing to
//!   store, and any replica sharing the session store and the key serves it.
//! - Notifications (and `logging/setLevel`) go to every member; lists are merged from every
//!   member's session; a call goes to the member owning its name, in its session there, its
//!   answer streamed back with the client's session id and every request a member sends within
//!   it (an elicitation, a sampling request) renumbered `"<member>:<id>"`, so two members never
//!   collide and the client's answer goes back to the member that asked, with its own id.
//!   The answer's event ids are the member session's, as `<member>:<id>`: a `GET` with
//!   `Last-Event-ID` resumes it in that member's session (`resume`).
//! - DELETE ends every member session. A member that could not be reached when the session
//!   began has no session in it: its calls get -32011 with `data.member` and
//!   `data.reason: member-not-in-session` (a new session includes it again).

use super::answers::{answer, filtered, own_name};
use super::calls::Named;
use super::fanout::{self, pipe};
use super::request::Virtual;
use super::stream::{answer_route, member_get, renumber, stream};
use crate::downstream::client::Client;
use crate::error::GatewayError;
use crate::federation::merge::List;
use crate::routing::{Members, Route};
use bytes::Bytes;
use mcp_wire::headers::LAST_EVENT_ID;
use mcp_wire::{inspect_body, sse};
use pingora::prelude::*;
use serde_json::{json, Map, Value};
use std::collections::BTreeMap;

use crate::downstream::answer as send;
use crate::forward::relay::request_body;
use crate::request::ctx::RequestCtx;
use crate::{
    error::Fail,
    request::{Gateway, Handled},
};

/// Serves one request of a legacy client on a virtual route.
pub(super) async fn serve(
    gw: &Gateway,
    session: &mut impl Client,
    ctx: &mut RequestCtx,
    route: &Route,
    members: &Members,
) -> Handled {
    let http_method = session.req_header().method.clone();
    let sid = mcp_wire::headers::session_id(&session.req_header().headers);
    if http_method == http::Method::GET {
        return get(gw, session, ctx, (route, members), sid).await;
    }
    let body = body_of(session, ctx, &http_method).await?;
    let (method, name, has_id) = what_is(ctx, &body)?;
    let mut v = Virtual::of(gw, session, ctx, route, members);
    let Some(sid) = sid else {
        return begin(v, session, ctx, method.as_deref(), &body).await;
    };
    let opened = members
        .cursors
        .open_session(&sid, &route.label, v.principal_key())
        .map_err(|_| GatewayError::session_not_found("unknown"))?;
    v.sessions = Some(opened);
    if http_method == http::Method::DELETE {
        v.to_all(Bytes::new()).await;
        drop(v);
        return send::empty(session, 200).await.map_err(Fail::Io);
    }
    let id = ctx
        .request_id
        .clone()
        .unwrap_or_else(mcp_wire::RequestId::null);
    let Some(method) = method else {
        // the client's answer to a member's request: back to that member, with its own id
        v.answer_member(&body).await?;
        drop(v);
        return send::empty(session, 202).await.map_err(Fail::Io);
    };
    if !has_id || method == "logging/setLevel" {
        // a notification, or a setting of the session: every member takes it
        v.to_all(body.clone()).await;
        drop(v);
        if !has_id {
            return send::empty(session, 202).await.map_err(Fail::Io);
        }
        return answer(session, ctx, mcp_wire::messages::empty_result(&id)).await;
    }
    let mut filter = None;
    let result = if method == "ping" {
        json!({})
    } else if let Some(list) = List::of_method(&method) {
        filter = crate::classify::classify(ctx, route, Some(&method), None)?.filter;
        let body = intercept(session, ctx, route, &method, &sid, body).await?;
        let msg: Value =
            serde_json::from_slice(&body).map_err(|e| GatewayError::parse_error(&e.to_string()))?;
        v.list(list, &msg).await?
    } else if let Some(named) = named(&method, name.as_deref(), &body) {
        crate::classify::classify(ctx, route, Some(&method), Some(&named.exposed))?;
        let body = intercept(session, ctx, route, &method, &sid, body).await?;
        return call(&v, (session, ctx), &named, &body, &method, &sid).await;
    } else {
        return Err(GatewayError::not_on_virtual_route(&method).into());
    };
    drop(v);
    // the authz rules filter a merged list for legacy clients as for 2026-07-28 ones
    let body = filtered(route, ctx, filter, mcp_wire::messages::result(&id, &result));
    answer(session, ctx, body).await
}

/// A request outside any session (`method`, `body`): an `initialize` begins one, with a
/// session in each member that answers it; any other request needs the session's id.
async fn begin(
    v: Virtual<'_>,
    session: &mut impl Client,
    ctx: &mut RequestCtx,
    method: Option<&str>,
    body: &Bytes,
) -> Handled {
    if method != Some("initialize") {
        let detail = "a session-era request on a virtual route needs the Mcp-Session-Id its initialize answered";
        return Err(GatewayError::invalid_request(detail).into());
    }
    let (sid, answer) = initialize(&v, body).await?;
    drop(v);
    ctx.capture_response(&answer);
    send::json(session, 200, Some(&sid), answer)
        .await
        .map_err(Fail::Io)
}

/// The body of a legacy client's `POST` (read whole, captured); a `DELETE` has none; no other
/// method is allowed here (a `GET` is a stream's).
async fn body_of(
    session: &mut impl Client,
    ctx: &mut RequestCtx,
    http_method: &http::Method,
) -> Result<Bytes, Fail> {
    if *http_method == http::Method::POST {
        let body = request_body(session, ctx).await?;
        ctx.capture_request(&body);
        Ok(body)
    } else if *http_method == http::Method::DELETE {
        Ok(Bytes::new())
    } else {
        let e = GatewayError::method_not_allowed(http_method.as_str(), "POST, DELETE");
        Err(e.into())
    }
}

/// What a legacy client's message `body` is: its method, its name, and whether it has an id
/// (`ctx` learns it); an empty body (a `DELETE`'s) has none of them.
fn what_is(
    ctx: &mut RequestCtx,
    body: &[u8],
) -> Result<(Option<String>, Option<String>, bool), Fail> {
    if body.is_empty() {
        return Ok((None, None, false));
    }
    let info = inspect_body(body)?;
    ctx.request_id = Some(info.request_id());
    let parts = (
        info.method.as_deref().map(str::to_owned),
        info.name.as_deref().map(str::to_owned),
        info.id.is_some(),
    );
    Ok(parts)
}

/// A call (`named`, authorized) in the client's session `sid`: to the member owning what it
/// names, in its session there (-32011 when it has none), the answer piped back with the
/// member's requests renumbered.
async fn call(
    v: &Virtual<'_>,
    (session, ctx): (&mut impl Client, &mut RequestCtx),
    named: &Named,
    body: &Bytes,
    method: &str,
    sid: &str,
) -> Handled {
    let (member, own) = v.member_for(named, body).await?;
    let member_name = v.member_name(member).to_owned();
    if v.sessions
        .as_ref()
        .is_some_and(|s| !s.contains_key(&member_name))
    {
        return Err(member_not_in_session(&member_name).into());
    }
    let body = own_name(body, method, named, &own)?;
    let mut ask = v.ask_of(member, body);
    ctx.note_member(&member_name, ask.route.default_pool);
    // the member's backend, for the call's audit record (the member request has a context
    // of its own)
    let served_by = ctx.audit.is_some().then(std::sync::Arc::default);
    ask.served_by.clone_from(&served_by);
    let piped = pipe(v.gw, session, ask, sid, |event| {
        renumber(event, &member_name, true)
    })
    .await;
    let backend = served_by.and_then(|s| crate::sync::lock(&s).take());
    if let Some(note) = ctx.audit.as_deref_mut() {
        note.backend = backend;
    }
    piped
}

/// A legacy client's `GET` with `Last-Event-ID`: an answer of one member resumed. A call's
/// answer carries its member's event ids as `<member>:<id>`, so the id names the member; the
/// member session there resumes after its own id, as a plain session does (the rest of the
/// answer from the gateway's buffer, on any replica with Redis), renumbered as the answer
/// was. An id naming no member of this session is -32030 `unknown`, as on a plain session.
async fn resume(
    gw: &Gateway,
    session: &mut impl Client,
    ctx: &RequestCtx,
    members: &Members,
    sessions: &std::collections::BTreeMap<String, String>,
    sid: &str,
    last: &str,
) -> Handled {
    let unknown = || GatewayError::resume_unavailable("unknown", last);
    let (member, own) = last.split_once(':').ok_or_else(unknown)?;
    let i = members
        .server
        .members
        .iter()
        .position(|m| m.names.name == member)
        .ok_or_else(unknown)?;
    let member_session = sessions.get(member).filter(|s| !s.is_empty());
    let member_session = Some(member_session.ok_or_else(unknown)?.clone());
    let resume = Some(own.to_owned());
    let ask = member_get(ctx, &members.routes[i], member_session, resume);
    pipe(gw, session, ask, sid, |event| renumber(event, member, true)).await
}

/// The client's GET in its session `sid`: the merged stream of its member sessions, or the
/// resumption of one member's answer (`Last-Event-ID`).
async fn get(
    gw: &Gateway,
    session: &mut impl Client,
    ctx: &RequestCtx,
    (route, members): (&Route, &Members),
    sid: Option<String>,
) -> Handled {
    let Some(sid) = sid else {
        let detail = "a session's stream needs the Mcp-Session-Id its initialize answered";
        return Err(GatewayError::invalid_request(detail).into());
    };
    let principal = ctx.principal.as_deref().map_or("", |p| &*p.id);
    let sessions = members
        .cursors
        .open_session(&sid, &route.label, principal)
        .map_err(|_| GatewayError::session_not_found("unknown"))?;
    let last = session.req_header().headers.get(LAST_EVENT_ID);
    if let Some(last) = last.map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned()) {
        return resume(gw, session, ctx, members, &sessions, &sid, &last).await;
    }
    stream(gw, session, ctx, members, &sessions).await
}

/// What a session-era request names (`resources/subscribe` and `unsubscribe` by URI too).
fn named(method: &str, name: Option<&str>, body: &[u8]) -> Option<Named> {
    match method {
        "resources/subscribe" | "resources/unsubscribe" => {
            let msg: Value = serde_json::from_slice(body).ok()?;
            let uri = msg.pointer("/params/uri")?.as_str()?;
            Named::read("resources/read", Some(uri), body)
        }
        _ => Named::read(method, name, body),
    }
}

impl Virtual<'_> {
    /// The client's answer (`body`) to a member's request: back to that member, with the id
    /// it gave its request; what the member answers is not the client's.
    async fn answer_member(&self, body: &[u8]) -> Result<(), GatewayError> {
        let (member, own_id) = answer_route(body, self.members).ok_or_else(|| {
            GatewayError::invalid_request("an answer to no request a member of this session sent")
        })?;
        let body = with_id(body, own_id)?;
        let ask = self.ask_of(member, body);
        let _ = fanout::ask(self.gw, &self.parent, ask, self.deadline, None).await;
        Ok(())
    }

    /// Sends `body` to every member in the client's session there (a notification, a
    /// setting, a DELETE when empty); what they answer is not the client's.
    async fn to_all(&self, body: Bytes) {
        let all: Vec<usize> = (0..self.members.routes.len())
            .filter(|&i| {
                let name = self.member_name(i);
                self.sessions.as_ref().is_none_or(|s| s.contains_key(name))
            })
            .collect();
        let asks = all.iter().map(|&i| {
            let ask = self.ask_of(i, body.clone());
            fanout::ask(self.gw, &self.parent, ask, self.deadline, None)
        });
        futures_util::future::join_all(asks).await;
    }
}

/// The client's `initialize`, sent to every member: the client's session id (the members'
/// sessions, sealed) and the virtual server's answer.
async fn initialize(v: &Virtual<'_>, body: &Bytes) -> Result<(String, Bytes), Fail> {
    let all: Vec<usize> = (0..v.members.routes.len()).collect();
    let asks = all.iter().map(|&i| {
        let ask = v.ask_of(i, body.clone());
        async move { (i, fanout::ask(v.gw, &v.parent, ask, v.deadline, None).await) }
    });
    let answers = futures_util::future::join_all(asks).await;
    let msg: Value =
        serde_json::from_slice(body).map_err(|e| GatewayError::parse_error(&e.to_string()))?;
    let asked = msg
        .pointer("/params/protocolVersion")
        .and_then(Value::as_str);
    let mut sessions = BTreeMap::new();
    let mut capabilities = Map::new();
    let mut instructions = Vec::new();
    let mut versions = Vec::new();
    let mut left_out = Vec::new();
    for (i, answer) in answers {
        let name = v.member_name(i).to_owned();
        let (session_id, result) = match initialized(answer) {
            Ok(initialized) => initialized,
            Err(reason) => {
                left_out.push((i, reason));
                continue;
            }
        };
        sessions.insert(name.clone(), session_id.unwrap_or_default());
        if let Some(Value::Object(caps)) = result.get("capabilities") {
            merge_capabilities(&mut capabilities, caps);
        }
        if let Some(text) = result.get("instructions").and_then(Value::as_str) {
            instructions.push(format!("## {name}\n\n{text}"));
        }
        if let Some(version) = result.get("protocolVersion").and_then(Value::as_str) {
            versions.push(version.to_owned());
        }
    }
    v.left_out(&left_out);
    if sessions.is_empty() {
        return Err(GatewayError::unavailable(&v.route.label, left_out.len()).into());
    }
    // the version the client asked for when every member took it, else the first member's
    let version = match asked {
        Some(a) if versions.iter().all(|x| x == a) => a.to_owned(),
        _ => versions.first().cloned().unwrap_or_default(),
    };
    let server = &v.members.server;
    let mut result = json!({
        "protocolVersion": version,
        "capabilities": capabilities,
        "serverInfo": {"name": server.name, "version": server.version},
    });
    let instructions = server
        .instructions
        .clone()
        .or_else(|| (!instructions.is_empty()).then(|| instructions.join("\n\n")));
    if let Some(text) = instructions {
        result["instructions"] = Value::String(text);
    }
    let id = mcp_wire::RequestId::from_json(
        &msg.get("id")
            .map(Value::to_string)
            .unwrap_or_else(|| "null".into()),
    )
    .unwrap_or_else(mcp_wire::RequestId::null);
    let answer = mcp_wire::messages::result(&id, &result);
    let sid = v
        .members
        .cursors
        .seal_session(&v.route.label, v.principal_key(), &sessions)
        .map_err(|e| GatewayError::internal(format!("sealing a virtual session id: {e}")))?;
    Ok((sid, answer))
}

/// A member's answer to the client's `initialize`: its session id there and its `result`, or
/// why it is left out of the client's session.
fn initialized(
    answer: Result<fanout::Answer, &'static str>,
) -> Result<(Option<String>, Value), &'static str> {
    let a = answer?;
    let result =
        sse::response(a.content_type.as_deref(), &a.body).and_then(|m| m.get("result").cloned());
    match result {
        Some(r) => Ok((a.session_id, r)),
        None => Err("error"),
    }
}

/// What a member's `capabilities` (`caps`) adds to the virtual server's: each capability it
/// has, the lists' with `listChanged` (the session's stream says when a member comes or
/// goes), and resources' `subscribe` when one member takes subscriptions.
fn merge_capabilities(capabilities: &mut Map<String, Value>, caps: &Map<String, Value>) {
    for key in ["tools", "prompts", "resources", "completions", "logging"] {
        if caps.contains_key(key) {
            // the session's stream says when a member comes or goes
            let changes = matches!(key, "tools" | "prompts" | "resources");
            let mut cap = if changes {
                json!({"listChanged": true})
            } else {
                json!({})
            };
            let subscribes = caps.get(key).and_then(|c| c.get("subscribe"));
            if key == "resources" && subscribes == Some(&Value::Bool(true)) {
                cap["subscribe"] = Value::Bool(true);
            }
            match capabilities.get_mut(key) {
                Some(Value::Object(held)) if cap.get("subscribe").is_some() => {
                    held.insert("subscribe".into(), Value::Bool(true));
                }
                Some(_) => {}
                None => {
                    capabilities.insert(key.into(), cap);
                }
            }
        }
    }
}

/// `body` with its `id` replaced.
fn with_id(body: &[u8], id: Value) -> Result<Bytes, GatewayError> {
    let mut msg: Value =
        serde_json::from_slice(body).map_err(|e| GatewayError::parse_error(&e.to_string()))?;
    msg["id"] = id;
    Ok(Bytes::from(serde_json::to_vec(&msg).unwrap_or_default()))
}

/// A call to a member that has no session in the client's session.
fn member_not_in_session(member: &str) -> GatewayError {
    GatewayError::unavailable(member, 0)
        .with("member", member)
        .with("reason", "member-not-in-session")
}

/// The route's request-phase interceptors on a classified request of the session `sid`
/// (`forward/intercept.rs`), its answer's gate armed: the body to send on.
async fn intercept(
    session: &mut impl Client,
    ctx: &RequestCtx,
    route: &Route,
    method: &str,
    sid: &str,
    body: Bytes,
) -> Result<Bytes, GatewayError> {
    let changed =
        crate::forward::intercept::request(session, ctx, route, Some(method), Some(sid), &body);
    Ok(changed.await?.unwrap_or(body))
}
