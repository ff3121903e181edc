//! What a virtual server answers from all its members at once: `server/discover` (its own
//! `serverInfo` and `instructions`, the members' capabilities joined) and the four lists,
//! merged (`federation::merge`) under one sealed cursor that carries every member's own.
//! Members are asked concurrently, each within the route's member deadline; one that fails
//! or misses it is left out of that answer, counted and logged, never the whole answer.

use super::fanout::{self, Answer};
use super::request::Virtual;
use super::resources;
use crate::federation::budget::Reservation;
use crate::federation::cursor::{Page, Position};
use crate::federation::merge::{merge, List, Part};
use mcp_wire::sse;
use serde_json::{json, Map, Value};

/// The `_meta` key of a 2026-07-28 result's server.
const SERVER_INFO: &str = "io.modelcontextprotocol/serverInfo";

/// Each member asked and its `result`, or why there is none.
type Answers = Vec<(usize, Result<Map<String, Value>, &'static str>)>;

/// How many pages of each member a name lookup reads at most.
const LOOKUP_PAGES: usize = 20;

/// The cache hints of an answer merged from members' (`ttlMs`, `cacheScope`): fresh as long
/// as the least fresh of them, `public` only when every one is. A member left out makes the
/// answer one not to keep (`ttlMs` 0: it would hide the member until it ran out); a member
/// without the list (no prompts, say) adds nothing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Hints {
    pub(super) ttl_ms: u64,
    pub(super) public: bool,
}

impl Hints {
    fn of(answers: &Answers) -> Hints {
        let mut hints = Hints {
            ttl_ms: u64::MAX,
            public: true,
        };
        for (_, answer) in answers {
            match answer {
                Ok(result) if result.is_empty() => {}
                Ok(result) => {
                    let ttl = result.get("ttlMs").and_then(Value::as_u64).unwrap_or(0);
                    hints.ttl_ms = hints.ttl_ms.min(ttl);
                    let scope = result.get("cacheScope").and_then(Value::as_str);
                    hints.public &= scope == Some("public");
                }
                Err(_) => hints.ttl_ms = 0,
            }
        }
        if hints.ttl_ms == u64::MAX {
            hints.ttl_ms = 0;
        }
        hints
    }

    /// Writes them into a 2026-07-28 `result`.
    fn write(self, result: &mut Value) {
        result["ttlMs"] = Value::from(self.ttl_ms);
        let scope = if self.public { "public" } else { "private" };
        result["cacheScope"] = Value::from(scope);
    }
}

impl Virtual<'_> {
    /// The member's answer's `result`, or why there is none (its label in the metric).
    fn result_of(answer: Result<Answer, &'static str>) -> Result<Map<String, Value>, &'static str> {
        let answer = answer?;
        let messages = sse::messages(answer.content_type.as_deref(), &answer.body);
        for m in messages.iter().rev() {
            let Ok(v) = serde_json::from_slice::<Value>(m) else {
                continue;
            };
            if v.get("method").is_some() {
                continue; // a notification or request on the way
            }
            let unsupported = v.pointer("/error/code").and_then(Value::as_i64) == Some(-32601);
            return match v.get("result") {
                Some(Value::Object(r)) => Ok(r.clone()),
                // a member without that list (no prompts, say) lists nothing: not a failure
                _ if unsupported => Ok(Map::new()),
                _ => Err("error"),
            };
        }
        Err("no-answer")
    }

    /// Asks every member in `members` for `body(member)`, concurrently: their results, and
    /// the bytes their answers hold in the merged lists' budget (given back when dropped).
    async fn ask_all(
        &self,
        members: &[usize],
        body: impl Fn(usize) -> bytes::Bytes,
    ) -> (
        Vec<(usize, Result<Map<String, Value>, &'static str>)>,
        Reservation,
    ) {
        let max = self.state.config.limits.max_merged_list_bytes;
        let held = std::sync::Mutex::new(self.budget.reserve(self.budget_caller(), max));
        let asks = members.iter().map(|&i| {
            let ask = self.ask_of(i, body(i));
            let held = &held;
            async move {
                let answer =
                    fanout::ask(self.gw, &self.parent, ask, self.deadline, Some(held)).await;
                (i, Self::result_of(answer))
            }
        });
        let answers = futures_util::future::join_all(asks).await;
        (
            answers,
            held.into_inner().unwrap_or_else(|e| e.into_inner()),
        )
    }

    /// The refusal of a merge whose members' answers passed the budget, if one did.
    fn over_budget(&self, answers: &Answers) -> Option<crate::error::GatewayError> {
        let max = self.state.config.limits.max_merged_list_bytes;
        answers.iter().find_map(|(_, a)| match a {
            Err("over-budget-gateway") => Some(crate::error::GatewayError::merged_lists_full(
                "gateway", max,
            )),
            Err("over-budget-caller") => Some(crate::error::GatewayError::merged_lists_full(
                "caller",
                crate::federation::budget::caller_share(max),
            )),
            _ => None,
        })
    }

    /// The cache hints of an answer merged from `answers`: [`Hints::of`], and never `public`
    /// where what members list may differ from this caller's to another's (their pools
    /// exchange the caller's token, send identity headers, or get its `Authorization`).
    fn hints(&self, answers: &Answers) -> Hints {
        let mut hints = Hints::of(answers);
        hints.public &= !self.members.names.private_to(self.names_caller.as_deref());
        hints
    }

    /// Counts the run-time collisions of a merged list, and logs each at warn the first
    /// time it is seen (not on every list).
    fn collided(&self, list: List, collisions: &[crate::federation::names::Collision]) {
        for c in collisions {
            self.count(self.member_name(c.left_out), "collision");
            let conflict = format!("{list:?} {} {} {}", c.exposed, c.kept, c.left_out);
            if self.members.names.first_warning(conflict) {
                tracing::warn!(
                    route = %self.route.label,
                    name = %c.exposed,
                    member = self.member_name(c.kept),
                    other = self.member_name(c.left_out),
                    "two members of a virtual server list the same name: the member listed first keeps it, the other's is left out"
                );
            }
        }
    }

    /// Counts and logs the members left out of an answer.
    pub(super) fn left_out(&self, left_out: &[(usize, &'static str)]) {
        for (i, reason) in left_out {
            let member = self.member_name(*i);
            self.count(member, "left-out");
            tracing::warn!(route = %self.route.label, member, reason, "a virtual server's member was left out of an answer");
        }
    }

    /// The `server/discover` result: the virtual server's own `serverInfo` and
    /// `instructions` (configured, or the members' joined under headings), the capabilities
    /// any member has (`listChanged` for the lists, which change as members come and go;
    /// `resources.subscribe` when a member takes subscriptions).
    pub(super) async fn discover(&self, body: &bytes::Bytes) -> Value {
        let all: Vec<usize> = (0..self.members.routes.len()).collect();
        let (answers, _held) = self.ask_all(&all, |_| body.clone()).await;
        let hints = self.hints(&answers);
        let mut capabilities = Map::new();
        let mut instructions = Vec::new();
        let mut left_out = Vec::new();
        for (i, answer) in answers {
            let result = match answer {
                Ok(r) => r,
                Err(reason) => {
                    left_out.push((i, reason));
                    continue;
                }
            };
            if let Some(Value::Object(caps)) = result.get("capabilities") {
                for key in ["tools", "prompts", "resources", "completions", "logging"] {
                    if caps.contains_key(key) {
                        capabilities.entry(key).or_insert_with(|| json!({}));
                    }
                }
                // a member's resources it takes subscriptions for: listened to on its behalf
                let subscribe = caps.get("resources").and_then(|r| r.get("subscribe"));
                if subscribe.and_then(Value::as_bool) == Some(true) {
                    capabilities["resources"]["subscribe"] = Value::Bool(true);
                }
            }
            if let Some(text) = result.get("instructions").and_then(Value::as_str) {
                instructions.push(format!("## {}\n\n{text}", self.member_name(i)));
            }
        }
        self.left_out(&left_out);
        // the merged lists change when a member comes or goes (`subscriptions/listen`)
        for key in ["tools", "prompts", "resources"] {
            if let Some(Value::Object(cap)) = capabilities.get_mut(key) {
                cap.insert("listChanged".into(), Value::Bool(true));
            }
        }
        let server = &self.members.server;
        let instructions = server
            .instructions
            .clone()
            .or_else(|| (!instructions.is_empty()).then(|| instructions.join("\n\n")));
        let mut result = json!({
            "resultType": "complete",
            "supportedVersions": ["2026-07-28"],
            "capabilities": capabilities,
            "_meta": {SERVER_INFO: self.server_info()},
        });
        hints.write(&mut result);
        if let Some(text) = instructions {
            result["instructions"] = Value::String(text);
        }
        result
    }

    /// The merged page of `list` that `msg` asks for (its `params.cursor`: the virtual
    /// server's own, or none for the first page).
    pub(super) async fn list(
        &self,
        list: List,
        msg: &Value,
    ) -> Result<Value, crate::error::GatewayError> {
        let before = match msg.pointer("/params/cursor").and_then(Value::as_str) {
            Some(cursor) => self
                .members
                .cursors
                .open(cursor, &self.route.label, self.principal_key())
                .map_err(crate::error::GatewayError::bad_cursor)?,
            None => Position::default(),
        };
        let first = msg.pointer("/params/cursor").is_none();
        let asked: Vec<usize> = (0..self.members.routes.len())
            .filter(|&i| first || before.next_of(self.member_name(i)).is_some())
            .collect();
        let (merged, mut hints, _held) = self.page(list, msg, &before, &asked).await?;
        self.left_out(&merged.left_out);
        self.collided(list, &merged.collisions);
        let mut result = if self.legacy() {
            json!({list.key(): merged.items})
        } else {
            json!({
                "resultType": "complete",
                list.key(): merged.items,
                "_meta": {SERVER_INFO: self.server_info()},
            })
        };
        if !merged.position.finished() {
            // its cursor is sealed for this caller
            hints.public = false;
            let cursor = self
                .members
                .cursors
                .seal(&self.route.label, self.principal_key(), &merged.position)
                .map_err(|e| {
                    crate::error::GatewayError::internal(format!("sealing a list cursor: {e}"))
                })?;
            result["nextCursor"] = Value::String(cursor);
        }
        if !self.legacy() {
            hints.write(&mut result);
        }
        Ok(result)
    }

    /// One merged page: `asked` members asked for their next page after `before`, its cache
    /// hints, and the bytes it holds (until dropped); refused when the members' answers pass
    /// the budget.
    async fn page(
        &self,
        list: List,
        msg: &Value,
        before: &Position,
        asked: &[usize],
    ) -> Result<(crate::federation::merge::Merged, Hints, Reservation), crate::error::GatewayError>
    {
        let body = |i: usize| {
            let mut m = msg.clone();
            let params = m
                .as_object_mut()
                .map(|o| o.entry("params").or_insert_with(|| json!({})));
            if let Some(Value::Object(params)) = params {
                match before.next_of(self.member_name(i)) {
                    Some(c) => params.insert("cursor".into(), Value::String(c.to_owned())),
                    None => params.remove("cursor"),
                };
            }
            bytes::Bytes::from(serde_json::to_vec(&m).unwrap_or_default())
        };
        let (answers, held) = self.ask_all(asked, body).await;
        if list == List::Tools {
            self.learn_tool_headers(&answers);
        }
        if let Some(refused) = self.over_budget(&answers) {
            return Err(refused);
        }
        let hints = self.hints(&answers);
        let members = &self.members.server.members;
        let parts = answers
            .into_iter()
            .map(|(i, r)| {
                let admitted = |r| Part::Listed(resources::admitted(list, &members[i].names, r));
                (i, r.map_or_else(Part::Failed, admitted))
            })
            .collect();
        let map = self.names();
        let mut names = crate::sync::write(&map);
        Ok((merge(&mut names, list, before, parts), hints, held))
    }

    /// Reads every member's `list` (up to [`LOOKUP_PAGES`] pages each) so the names map knows
    /// what each exposes now.
    pub(super) async fn learn(&self, list: List, msg: &Value) {
        let request = lookup_request(list, msg);
        let mut position = Position::default();
        let mut asked: Vec<usize> = (0..self.members.routes.len()).collect();
        for _ in 0..LOOKUP_PAGES {
            if asked.is_empty() {
                break;
            }
            // past the budget, the lookup stops: the name is looked up in what was learnt
            let Ok((merged, _, _held)) = self.page(list, &request, &position, &asked).await else {
                break;
            };
            self.left_out(&merged.left_out);
            position = merged.position;
            asked.retain(|&i| {
                matches!(
                    position.members.get(self.member_name(i)),
                    Some(Page::Next(_))
                )
            });
        }
        crate::sync::write(&self.names()).looked_up(list.kind());
    }

    /// Every member's resource templates (their own `uriTemplate`s the member's resource
    /// filter keeps), members in config order: where a URI no list names is looked for.
    pub(super) async fn templates(&self, msg: &Value) -> Vec<(usize, String)> {
        // read lately: kept (an unknown URI read again and again asks the members once per
        // `LOOKUP_FRESH`)
        if let Some(kept) = crate::sync::read(&self.names()).templates() {
            return kept.to_vec();
        }
        let request = lookup_request(List::Templates, msg);
        let all: Vec<usize> = (0..self.members.routes.len()).collect();
        let body = bytes::Bytes::from(serde_json::to_vec(&request).unwrap_or_default());
        let (answers, _held) = self.ask_all(&all, |_| body.clone()).await;
        let mut found = Vec::new();
        for (i, answer) in answers {
            let Ok(result) = answer else { continue };
            let filter = self.members.server.members[i]
                .names
                .filter(crate::config::Kind::Resource);
            let listed = result.get("resourceTemplates").and_then(Value::as_array);
            for t in listed.into_iter().flatten() {
                if let Some(template) = t.get("uriTemplate").and_then(Value::as_str) {
                    if filter.keeps(template) {
                        found.push((i, template.to_owned()));
                    }
                }
            }
        }
        found.sort_by_key(|(i, _)| *i);
        crate::sync::write(&self.names()).keep_templates(found.clone());
        found
    }
}

/// A first-page request of `list` carrying the client's `_meta` (its era's envelope).
fn lookup_request(list: List, msg: &Value) -> Value {
    let mut request = json!({"jsonrpc": "2.0", "id": 0, "method": method_of(list), "params": {}});
    if let Some(meta) = msg.pointer("/params/_meta") {
        request["params"]["_meta"] = meta.clone();
    }
    request
}

/// The list method of `list`.
fn method_of(list: List) -> &'static str {
    match list {
        List::Tools => "tools/list",
        List::Prompts => "prompts/list",
        List::Resources => "resources/list",
        List::Templates => "resources/templates/list",
    }
}
