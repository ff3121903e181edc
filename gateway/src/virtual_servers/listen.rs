//! A 2026-07-28 client's `subscriptions/listen` on a virtual route: one stream the gateway
//! writes itself, fed by a listen of its own on every member that has something to listen for
//! (a subrequest each, served on the member's route as a plain route of its pool serves a
//! listen: passed through to a 2026-07-28 pod, or held by the reverse bridge in a backend
//! session of its own on a legacy one).
//!
//! - Each member is asked for the list changes the client asked for and for the resource URIs
//!   it owns (ownership as for `resources/read`: the members' lists, then their templates);
//!   a URI no member owns is not honoured.
//! - The client's acknowledgement comes once every member acknowledged (or failed, or missed
//!   the member deadline): the list changes it asked for (the virtual server's lists change
//!   when a member comes or goes, whatever the members declare) and the URIs their members
//!   honoured.
//! - Then every member's notifications, each stamped with the client's subscription id (its
//!   listen request's id); and, when a member comes or goes (looked at each second, as for a
//!   legacy client's session stream), the list changes the client asked for. A member's
//!   stream that ends is opened again after 500 ms (five quick ends in a row at most).
//!   Keep-alive comments between; the client going away ends every member's listen.

use super::calls::Named;
use super::fanout;
use super::request::Virtual;
use super::stream::{each_second, open_again_soon, LIST_CHANGED};
use crate::config::Kind;
use crate::downstream::answer;
use crate::downstream::client::Client;
use crate::error::{Fail, GatewayError};
use bytes::Bytes;
use mcp_wire::translate::listen::{self, Heard};
use mcp_wire::{messages, sse};
use pingora::protocols::http::HttpTask;
use serde_json::{json, Map, Value};
use std::time::{Duration, Instant};
use tokio::sync::mpsc;

use crate::request::Handled;
use pingora_prometheus::prometheus::IntCounterVec;

/// The list-change flags of a listen filter, in [`LIST_CHANGED`]'s order.
const FLAGS: [&str; 3] = [
    "toolsListChanged",
    "promptsListChanged",
    "resourcesListChanged",
];

/// How often a member's listen that ended at once is opened again in a row.
const QUICK_ENDS: u32 = 5;

/// What the client asked to hear, read from its filter.
struct Wanted {
    /// The list-change flags asked for (by [`FLAGS`] position).
    flags: [bool; 3],
    /// The resource URIs asked for, in order.
    uris: Vec<String>,
}

impl Wanted {
    fn read(msg: &Value) -> Wanted {
        let filter = msg.pointer("/params/notifications");
        let flag = |f: &str| filter.and_then(|n| n.get(f)).and_then(Value::as_bool) == Some(true);
        let uris = filter
            .and_then(|n| n.get("resourceSubscriptions"))
            .and_then(Value::as_array)
            .map(|a| a.iter().filter_map(Value::as_str).map(str::to_owned))
            .into_iter()
            .flatten()
            .collect();
        Wanted {
            flags: FLAGS.map(flag),
            uris,
        }
    }

    /// The filter the client's acknowledgement says: the list changes asked for, and the
    /// URIs the members honoured.
    fn honoured(&self, members: &[Member]) -> Map<String, Value> {
        let mut honoured = self.of_member(&[]);
        let uris: Vec<&String> = members.iter().flat_map(|m| &m.honoured).collect();
        if !uris.is_empty() {
            honoured.insert("resourceSubscriptions".into(), json!(uris));
        }
        honoured
    }

    /// A member's listen filter: the flags asked for, and `uris` (those it owns).
    fn of_member(&self, uris: &[String]) -> Map<String, Value> {
        let mut filter = Map::new();
        for (flag, asked) in FLAGS.iter().zip(self.flags) {
            if asked {
                filter.insert((*flag).into(), Value::Bool(true));
            }
        }
        if !uris.is_empty() {
            filter.insert("resourceSubscriptions".into(), json!(uris));
        }
        filter
    }
}

/// One member's listen, as the client's stream follows it.
#[derive(Default)]
struct Member {
    splitter: sse::EventSplitter,
    /// Its answer is an event stream (else its listen was refused or failed).
    streaming: bool,
    /// It acknowledged its filter (on its first stream).
    acknowledged: bool,
    /// The URIs it honoured.
    honoured: Vec<String>,
    /// When its listen was last opened, and how often in a row it ended at once.
    opened: Option<Instant>,
    quick_ends: u32,
    /// Its listen ended for good (refused, or ending at once again and again).
    done: bool,
}

/// A client's listen, planned on the virtual route: what each member is asked.
pub(super) struct Plan {
    wanted: Wanted,
    /// The subscription: the listen request's id.
    sub_id: Value,
    /// Each member's listen (none: it has nothing to listen for).
    asks: Vec<Option<fanout::Ask>>,
    /// Each member's name (for logs and the `left-out` count).
    names: Vec<String>,
    deadline: Duration,
    /// The virtual route's label and the member events counter.
    label: String,
    events: IntCounterVec,
}

impl Virtual<'_> {
    /// Plans the listen `msg` (its `body`) of a 2026-07-28 client: each URI of its filter given
    /// to the member that owns it, each member's own filter.
    pub(super) async fn listen_plan(&self, msg: &Value, body: &Bytes) -> Plan {
        let wanted = Wanted::read(msg);
        let sub_id = msg.get("id").cloned().unwrap_or(Value::Null);
        let n = self.members.routes.len();
        let mut owned: Vec<Vec<String>> = vec![Vec::new(); n];
        for uri in &wanted.uris {
            let named = Named {
                kind: Kind::Resource,
                exposed: uri.clone(),
                ref_type: None,
            };
            if let Some((i, own)) = self.resolve(&named, body).await {
                owned[i].push(own);
            }
        }
        let meta = msg.pointer("/params/_meta").cloned();
        let asks = (0..n)
            .map(|i| {
                let filter = wanted.of_member(&owned[i]);
                if filter.is_empty() {
                    return None;
                }
                let mut params = json!({"notifications": filter});
                if let Some(meta) = &meta {
                    params["_meta"] = meta.clone();
                }
                let req = json!({"jsonrpc": "2.0", "id": sub_id,
                    "method": "subscriptions/listen", "params": params});
                Some(self.ask_of(i, Bytes::from(req.to_string())))
            })
            .collect();
        Plan {
            wanted,
            sub_id,
            asks,
            names: (0..n).map(|i| self.member_name(i).to_owned()).collect(),
            deadline: self.deadline,
            label: self.route.label.clone(),
            events: self.events.clone(),
        }
    }
}

impl Plan {
    /// Serves the planned listen on `session` (answering request `id`): `up` says whether
    /// each member has a backend that may take work; `keep_alive` is how often a comment
    /// keeps a quiet stream open.
    pub(super) async fn serve(
        self,
        gw: &crate::request::Gateway,
        session: &mut impl Client,
        id: &mcp_wire::RequestId,
        up: impl Fn() -> Vec<bool>,
        keep_alive: Duration,
    ) -> Handled {
        let Plan { wanted, sub_id, .. } = &self;
        let n = self.asks.len();
        let (tx, mut rx) = tokio::sync::mpsc::channel(64);
        let (again_tx, mut again) = tokio::sync::mpsc::channel::<usize>(8);
        let parent = super::member::Parent::of(session);
        let mut tasks = fanout::Streams::new(n);
        let mut state: Vec<Member> = (0..n).map(|_| Member::default()).collect();
        let open = |i: usize, state: &mut Member| {
            state.opened = Some(Instant::now());
            state.splitter = Default::default();
            let ask = self.asks[i].clone()?;
            Some(fanout::stream_into(gw, &parent, ask, i, tx.clone()))
        };
        for (i, member) in state.iter_mut().enumerate() {
            if let Some(stream) = open(i, member) {
                tasks.start(i, stream);
            } else {
                member.done = true;
            }
        }
        self.acknowledgements(&mut state, &mut tasks, &mut rx).await;
        self.count_left_out(&state);
        let honoured = wanted.honoured(&state);
        answer::open_stream(session, None).await.map_err(Fail::Io)?;
        write_event(session, &listen::acknowledged(&honoured, sub_id)).await?;
        if honoured.is_empty() {
            // nothing to listen for: the graceful end at once
            return self.end(session, id).await;
        }
        let mut was_up = up();
        // with no list changes asked for, the stream lives as long as a member's listen does
        let lists = wanted.flags.contains(&true);
        let mut tick = each_second();
        let first = tokio::time::Instant::now() + keep_alive;
        let mut alive = tokio::time::interval_at(first, keep_alive);
        loop {
            tokio::select! {
                _ = tick.tick() => {
                    let now = up();
                    if now != was_up {
                        was_up = now;
                        self.lists_changed(session).await?;
                    }
                }
                _ = alive.tick() => answer::event(session, keep_alive_comment()).await.map_err(Fail::Io)?,
                Some(i) = again.recv() => {
                    if let Some(stream) = open(i, &mut state[i]) {
                        tasks.start(i, stream);
                    }
                }
                Some((i, task)) = tasks.next(&mut rx) => {
                    let ended = task.is_none();
                    self.relay(session, &mut state[i], i, task).await?;
                    if !lists && state.iter().all(|m| m.done) {
                        // nothing left to hear: an abrupt end (the client listens again)
                        answer::end(session).await.map_err(Fail::Io)?;
                        return Ok(());
                    }
                    if ended && !state[i].done {
                        open_again_soon(&again_tx, i);
                    }
                }
                gone = session.gone() => {
                    tracing::debug!(gone = ?gone, "a virtual listen stream's client went away");
                    return Ok(());
                }
            }
        }
    }

    /// Waits for the members' acknowledgements (on `tasks`, their tasks sent to `rx`), within
    /// the member deadline; each member's state follows, with the URIs it honoured.
    async fn acknowledgements(
        &self,
        state: &mut [Member],
        tasks: &mut fanout::Streams<'_>,
        rx: &mut mpsc::Receiver<(usize, Option<HttpTask>)>,
    ) {
        let started = Instant::now();
        let waiting = |state: &[Member]| state.iter().any(|m| !m.done && !m.acknowledged);
        while waiting(state) {
            let left = self.deadline.saturating_sub(started.elapsed());
            let Ok(Some((i, task))) = tokio::time::timeout(left, tasks.next(rx)).await else {
                break;
            };
            for (heard, raw) in self.follow(&mut state[i], i, task) {
                if let Heard::Acknowledged { .. } = heard {
                    state[i].honoured = honoured_uris(&raw);
                }
            }
        }
    }

    /// Counts and logs each member whose listen was asked for and not acknowledged (it
    /// failed, or missed the deadline): left out of the client's listen.
    fn count_left_out(&self, state: &[Member]) {
        for (i, m) in state.iter().enumerate() {
            if self.asks[i].is_some() && !m.acknowledged {
                let reason = if m.done { "failed" } else { "deadline" };
                let member = self.names[i].as_str();
                self.events
                    .with_label_values(&[&self.label, member, "left-out"])
                    .inc();
                tracing::warn!(route = %self.label, member, reason, "a virtual server's member was left out of a listen");
            }
        }
    }

    /// The graceful end of the client's stream: the listen's result (answering request `id`)
    /// as its last event.
    async fn end(&self, session: &mut impl Client, id: &mcp_wire::RequestId) -> Handled {
        let end = messages::result(id, &listen::listen_result(&self.sub_id));
        answer::last(session, sse::event(&end))
            .await
            .map_err(Fail::Io)
    }

    /// Tells the client's stream of the list changes it asked for (a member came or went).
    async fn lists_changed(&self, session: &mut impl Client) -> Handled {
        for (method, asked) in LIST_CHANGED.iter().zip(self.wanted.flags) {
            if asked {
                let mut note = json!({"jsonrpc": "2.0", "method": method});
                listen::stamp(&mut note, &self.sub_id);
                write_event(session, &note).await?;
            }
        }
        Ok(())
    }

    /// Writes to the client's stream the notifications member `i`'s stream says in `task`,
    /// each stamped with the client's subscription (its state `m` follows: [`Plan::follow`]).
    async fn relay(
        &self,
        session: &mut impl Client,
        m: &mut Member,
        i: usize,
        task: Option<HttpTask>,
    ) -> Handled {
        for (heard, _) in self.follow(m, i, task) {
            if let Heard::Notify(mut note) = heard {
                // what a member says changed was heard by the cache on the member's own answer
                // (its seam: `cache/heard.rs`, or the reverse bridge's listen), with its pool
                listen::stamp(&mut note, &self.sub_id);
                write_event(session, &note).await?;
            }
        }
        Ok(())
    }

    /// What member `i`'s stream says in `task` (`None`: it ended): the messages of the events
    /// it completes (a request or an answer of the member reads as [`Heard::Nothing`] or
    /// [`Heard::Ended`]), each with its raw JSON. Its state follows (a refusal, an end).
    fn follow(&self, m: &mut Member, i: usize, task: Option<HttpTask>) -> Vec<(Heard, Vec<u8>)> {
        let mut out = Vec::new();
        match task {
            Some(HttpTask::Header(h, end)) => {
                let ct = h
                    .headers
                    .get(http::header::CONTENT_TYPE)
                    .and_then(|v| v.to_str().ok());
                m.streaming = h.status.as_u16() == 200 && sse::is_event_stream(ct) && !end;
                if !m.streaming && !m.acknowledged {
                    // refused (a JSON error), or no stream: nothing of it to listen to
                    tracing::warn!(
                        member = self.names[i].as_str(),
                        status = h.status.as_u16(),
                        "a member refused a virtual route's listen"
                    );
                    m.done = true;
                }
            }
            Some(HttpTask::Body(Some(chunk), _)) if m.streaming => {
                for event in m.splitter.push(&chunk) {
                    for raw in sse::messages(Some("text/event-stream"), &event) {
                        let heard = listen::heard(&raw);
                        match heard {
                            Heard::Acknowledged { .. } if m.acknowledged => continue,
                            Heard::Acknowledged { .. } => m.acknowledged = true,
                            Heard::Ended { error: Some(_) } if !m.acknowledged => m.done = true,
                            _ => {}
                        }
                        out.push((heard, raw));
                    }
                }
            }
            Some(_) => {}
            None => {
                let quick = m
                    .opened
                    .is_some_and(|t| t.elapsed() < Duration::from_secs(1));
                m.quick_ends = if quick { m.quick_ends + 1 } else { 0 };
                if !m.streaming || m.quick_ends >= QUICK_ENDS {
                    m.done = true;
                }
                m.streaming = false;
            }
        }
        out
    }
}

/// The URIs a member's acknowledgement (raw JSON) says it honours.
fn honoured_uris(raw: &[u8]) -> Vec<String> {
    let msg: Value = serde_json::from_slice(raw).unwrap_or(Value::Null);
    msg.pointer("/params/notifications/resourceSubscriptions")
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(Value::as_str)
                .map(str::to_owned)
                .collect()
        })
        .unwrap_or_default()
}

/// A comment that keeps the client's quiet stream open.
fn keep_alive_comment() -> Bytes {
    Bytes::from_static(crate::stream::KEEP_ALIVE)
}

/// One message `msg` as an event of the client's stream.
async fn write_event(session: &mut impl Client, msg: &Value) -> Handled {
    let json = serde_json::to_vec(msg).map_err(|_| GatewayError::internal("an event"))?;
    answer::message(session, &json).await.map_err(Fail::Io)
}
