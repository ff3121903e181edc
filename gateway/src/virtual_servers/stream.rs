//! A legacy client's streams on a virtual route: its GET stream, every member's own stream
//! in the client's session there merged into one, with the list-changed notifications when a
//! member comes or goes; and the ids of the requests members send (on any stream), renumbered
//! per member so two members never collide, and the way the client's answers go back.

use super::fanout;
use crate::downstream::answer;
use crate::downstream::client::Client;
use crate::error::GatewayError;
use crate::routing::{Members, Route};
use bytes::Bytes;
use mcp_wire::sse;
use pingora::http::ResponseHeader;
use pingora::protocols::http::HttpTask;
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::sync::Arc;

use crate::error::Fail;
use crate::request::ctx::RequestCtx;
use crate::request::Handled;

/// How often a member's stream that ended at once is opened again in a row before the client's
/// stream goes on without it.
const QUICK_ENDS: u32 = 5;

/// The client's GET stream: every member's own stream in the client's session there, opened
/// as a subrequest each and merged, event by event, each member's requests renumbered as in
/// a call; a member's stream that ends (its pod died, its session moved) is opened again
/// (after 500 ms), so its later notifications and requests still reach the client.
pub(super) async fn stream(
    gw: &crate::request::Gateway,
    session: &mut impl Client,
    ctx: &RequestCtx,
    members: &Members,
    sessions: &BTreeMap<String, String>,
) -> Handled {
    let name = |i: usize| members.server.members[i].names.name.as_str();
    let parent = super::member::Parent::of(session);
    let ask = |i: usize| {
        let sid = sessions.get(name(i)).cloned();
        member_get(ctx, &members.routes[i], sid, None)
    };
    let held: Vec<usize> = (0..members.routes.len())
        .filter(|&i| sessions.get(name(i)).is_some_and(|s| !s.is_empty()))
        .collect();
    if held.is_empty() {
        // no member keeps a session: nothing of theirs to stream
        return Err(GatewayError::method_not_allowed("GET", "POST, DELETE").into());
    }
    let (tx, mut rx) = tokio::sync::mpsc::channel(64);
    let (again_tx, mut again) = tokio::sync::mpsc::channel::<usize>(8);
    let n = members.routes.len();
    let mut tasks = fanout::Streams::new(n);
    let mut splitters: Vec<sse::EventSplitter> = (0..n).map(|_| Default::default()).collect();
    let mut streaming = vec![false; n];
    let mut quick_ends = vec![0u32; n];
    let mut opened_at = vec![std::time::Instant::now(); n];
    for &i in &held {
        tasks.start(i, fanout::stream_into(gw, &parent, ask(i), i, tx.clone()));
    }
    // the members' streams being read, or about to be opened again
    let mut live = held.len();
    answer::open_stream(session, None).await.map_err(Fail::Io)?;
    // a member coming or going changes the merged lists: the client is told, as a server whose
    // own lists changed tells it
    let mut up = members_up(ctx, members);
    let mut tick = each_second();
    while live > 0 {
        tokio::select! {
            _ = tick.tick() => {
                let now = members_up(ctx, members);
                if now != up {
                    up = now;
                    lists_changed(session).await?;
                }
            }
            Some(i) = again.recv() => {
                splitters[i] = Default::default();
                opened_at[i] = std::time::Instant::now();
                tasks.start(i, fanout::stream_into(gw, &parent, ask(i), i, tx.clone()));
            }
            Some((i, task)) = tasks.next(&mut rx) => match task {
                Some(HttpTask::Header(h, end)) => streaming[i] = streams(&h, end),
                Some(HttpTask::Body(Some(chunk), _)) if streaming[i] => {
                    write_renumbered(session, &mut splitters[i], &chunk, name(i)).await?;
                }
                Some(_) => {}
                None => {
                    // the member's stream ended: opened again, unless it keeps ending at once
                    quick_ends[i] = ends_in_a_row(opened_at[i], quick_ends[i]);
                    if streaming[i] && quick_ends[i] < QUICK_ENDS {
                        open_again_soon(&again_tx, i);
                    } else {
                        live -= 1;
                    }
                    streaming[i] = false;
                }
            },
            // the client left: every member's stream is dropped with this request, at once, not
            // at the next member event (a quiet stream may have none for hours)
            gone = session.gone() => {
                tracing::debug!(gone = ?gone, "a virtual session stream's client went away");
                return Ok(());
            }
        }
    }
    answer::end(session).await.map_err(Fail::Io)
}

/// A legacy client's request without a body (a `GET`) on member route `route`, in its
/// member session `member_session` there: the member's stream, or with `resume` (the
/// member's own event id) an answer resumed.
pub(super) fn member_get(
    ctx: &RequestCtx,
    route: &Arc<Route>,
    member_session: Option<String>,
    resume: Option<String>,
) -> fanout::Ask {
    fanout::Ask {
        state: ctx.state.clone(),
        route: route.clone(),
        body: Bytes::new(),
        principal: ctx.principal.clone(),
        era: mcp_wire::Era::Legacy,
        session: member_session,
        identity: ctx.admitted.identity.clone(),
        resume,
        served_by: None,
    }
}

/// Whether a member's answer head `h` (`end`: with no body) starts an event stream.
fn streams(h: &ResponseHeader, end: bool) -> bool {
    let ct = h
        .headers
        .get(http::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok());
    h.status.as_u16() == 200 && sse::is_event_stream(ct) && !end
}

/// The events of a member's stream that `chunk` completes (`splitter` holds the part of one
/// it began), written to the client's stream with the member's requests renumbered.
async fn write_renumbered(
    session: &mut impl Client,
    splitter: &mut sse::EventSplitter,
    chunk: &[u8],
    member: &str,
) -> Handled {
    for event in splitter.push(chunk) {
        let out = renumber(&event, member, false);
        if !out.is_empty() {
            answer::event(session, out).await.map_err(Fail::Io)?;
        }
    }
    Ok(())
}

/// How many times in a row a member's stream has ended at once (within a second of being
/// opened, at `opened`), now that it ended again: `before`, the count until now.
fn ends_in_a_row(opened: std::time::Instant, before: u32) -> u32 {
    let quick = opened.elapsed() < std::time::Duration::from_secs(1);
    if quick {
        before + 1
    } else {
        0
    }
}

/// A member's stream that ended is opened again (member `i` sent to `again`) after 500 ms.
pub(super) fn open_again_soon(again: &tokio::sync::mpsc::Sender<usize>, i: usize) {
    let again = again.clone();
    tokio::spawn(async move {
        tokio::time::sleep(std::time::Duration::from_millis(500)).await;
        let _ = again.send(i).await;
    });
}

/// The list changes a client's stream is told of when a member comes or goes, written to it.
async fn lists_changed(session: &mut impl Client) -> Handled {
    for method in LIST_CHANGED {
        let note = json!({"jsonrpc": "2.0", "method": method});
        answer::message(session, note.to_string().as_bytes())
            .await
            .map_err(Fail::Io)?;
    }
    Ok(())
}

/// The notifications a client's stream gets when a member comes or goes.
pub(super) const LIST_CHANGED: [&str; 3] = [
    "notifications/tools/list_changed",
    "notifications/prompts/list_changed",
    "notifications/resources/list_changed",
];

/// The tick a client's stream looks at its members on (coming or going): each second, a
/// late tick not made up for.
pub(super) fn each_second() -> tokio::time::Interval {
    let mut tick = tokio::time::interval(std::time::Duration::from_secs(1));
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    tick
}

/// Whether each member has a backend that may take work (up: not failed, not draining).
pub(super) fn members_up(ctx: &RequestCtx, members: &Members) -> Vec<bool> {
    members
        .server
        .members
        .iter()
        .map(|m| {
            ctx.state.pools.get(m.pool).is_some_and(|p| {
                p.backends()
                    .iter()
                    .any(|b| b.state() == crate::upstream::BackendState::Up)
            })
        })
        .collect()
}

/// A member's SSE event for the client: a request of the member (it has `method` and `id`)
/// gets the id `"<member>:<its id as JSON>"`. With `ids` (a call's answer, which the client
/// may resume) the event's id becomes `<member>:<its id>` and `retry` is kept, so a
/// `Last-Event-ID` names the member whose session holds the stream; without (the merged GET
/// stream, whose events come from every member) ids are not passed on. The rest is kept.
pub(super) fn renumber(event: &[u8], member: &str, ids: bool) -> Bytes {
    let mut data: Option<Vec<u8>> = None;
    let mut kept: Vec<&[u8]> = Vec::new();
    let mut id = None;
    for line in sse::lines(event) {
        let (field, value) = sse::field(line);
        match field {
            b"data" => sse::push_data(&mut data, value),
            b"id" if ids => id = Some(value),
            b"retry" if ids => kept.push(line),
            b"id" | b"retry" => {}
            _ if line.is_empty() => {}
            _ => kept.push(line),
        }
    }
    let mut out = Vec::with_capacity(event.len() + member.len() + 8);
    if let Some(id) = id {
        out.extend_from_slice(b"id: ");
        out.extend_from_slice(member.as_bytes());
        out.push(b':');
        out.extend_from_slice(id);
        out.extend_from_slice(b"\r\n");
    }
    for line in kept {
        out.extend_from_slice(line);
        out.extend_from_slice(b"\r\n");
    }
    if let Some(data) = data {
        let renumbered = serde_json::from_slice::<Value>(&data)
            .ok()
            .and_then(|mut m| {
                let id = m.get("id")?.clone();
                m.get("method")?;
                m["id"] = Value::String(format!("{member}:{id}"));
                serde_json::to_vec(&m).ok()
            });
        for line in renumbered
            .as_deref()
            .unwrap_or(&data)
            .split(|b| *b == b'\n')
        {
            out.extend_from_slice(b"data: ");
            out.extend_from_slice(line);
            out.extend_from_slice(b"\r\n");
        }
    }
    if out.is_empty() {
        return Bytes::new();
    }
    out.extend_from_slice(b"\r\n");
    Bytes::from(out)
}

/// Where the client's answer to a member's request goes: the member (index) and the id it
/// gave its request, from the id [`renumber`] gave it.
pub(super) fn answer_route(body: &[u8], members: &Members) -> Option<(usize, Value)> {
    let msg: Value = serde_json::from_slice(body).ok()?;
    let id = msg.get("id")?.as_str()?;
    let (member, own) = id.split_once(':')?;
    let index = members
        .server
        .members
        .iter()
        .position(|m| m.names.name == member)?;
    Some((index, serde_json::from_str(own).ok()?))
}
