//! The admin API of tool pinning (behind the admin token, as every `/admin/` path):
//! - `GET /admin/tool-pins`: every pinned pool, its mode, and each definition that waits,
//!   with the pinned and the new definition and a field-level diff of them;
//! - `POST /admin/tool-pins/approve?pool=P&tool=T&fingerprint=F`: the waiting definition of
//!   fingerprint `F` becomes the pin (the fingerprint must be the one shown: a definition that
//!   changed again since is not approved blind);
//! - `POST /admin/tool-pins/reject?pool=P&tool=T&fingerprint=F`: it stays quarantined, kept as
//!   rejected (not recorded again while the server sends it);
//! - `GET /admin/tool-pins/export?pool=P`: the pool's pins as a pins file (JSON lines).

use super::book::{parsed, Entry};
use super::canon::FIELDS;
use super::{audit_decision, now, Pins};
use crate::sync::{lock, read};
use http::StatusCode;
use serde_json::{json, Value};

/// Whether `path` is one of pinning's.
pub fn serves(path: &str) -> bool {
    path == "/admin/tool-pins" || path.starts_with("/admin/tool-pins/")
}

/// An answer's body.
pub enum Body {
    /// JSON.
    Json(Value),
    /// Plain text (an export).
    Text(String),
}

/// The answer to `path` (`post`: a POST) with `query`.
pub fn answer(pins: &Pins, path: &str, query: &str, post: bool) -> (StatusCode, Body) {
    match (path, post) {
        ("/admin/tool-pins", false) => (StatusCode::OK, Body::Json(pending(pins))),
        ("/admin/tool-pins/approve", true) => decide(pins, query, true),
        ("/admin/tool-pins/reject", true) => decide(pins, query, false),
        ("/admin/tool-pins/export", false) => export(pins, query),
        _ => (
            StatusCode::NOT_FOUND,
            Body::Json(
                json!({"error": "tool pins: GET /admin/tool-pins, POST /admin/tool-pins/approve or /reject ?pool=P&tool=T&fingerprint=F, GET /admin/tool-pins/export?pool=P"}),
            ),
        ),
    }
}

/// Every pinned pool and what waits in it.
pub fn pending(pins: &Pins) -> Value {
    let pools: Vec<Value> = pins
        .pools()
        .iter()
        .map(|p| {
            let config = read(&p.config).clone();
            let book = lock(&p.book);
            let waiting: Vec<Value> = book
                .tools
                .iter()
                .filter_map(|(name, e)| waiting(name, e))
                .collect();
            json!({
                "pool": p.name,
                "mode": config.mode.as_str(),
                "allowNewTools": config.allow_new_tools,
                "initialized": book.initialized,
                "tools": book.tools.len(),
                "pending": waiting,
            })
        })
        .collect();
    json!({ "pools": pools })
}

/// One waiting definition, with its pin and the fields that differ.
fn waiting(name: &str, e: &Entry) -> Option<Value> {
    let w = e.pending.as_ref()?;
    let old = parsed(e.pin.as_ref().and_then(|p| p.definition.as_deref()));
    let new = parsed(Some(&w.definition));
    let diff: Vec<Value> = FIELDS
        .iter()
        .filter(|f| old.get(**f) != new.get(**f))
        .map(|f| json!({"field": f, "old": old.get(*f), "new": new.get(*f)}))
        .collect();
    Some(json!({
        "tool": name,
        "kind": w.kind,
        "state": if w.rejected { "rejected" } else { "pending" },
        "since": w.at,
        "current": e.last.as_deref() == Some(w.fingerprint.as_str()),
        "old": {
            "fingerprint": e.pin.as_ref().map(|p| &p.fingerprint),
            "definition": old,
        },
        "new": {"fingerprint": w.fingerprint, "definition": new},
        "diff": diff,
    }))
}

/// The query's `pool`, `tool` and `fingerprint` (the first of each).
fn target(query: &str) -> (Option<String>, Option<String>, Option<String>) {
    let (mut pool, mut tool, mut fp) = (None, None, None);
    for (key, value) in url::form_urlencoded::parse(query.as_bytes()) {
        let slot = match &*key {
            "pool" => &mut pool,
            "tool" => &mut tool,
            "fingerprint" => &mut fp,
            _ => continue,
        };
        slot.get_or_insert_with(|| value.into_owned());
    }
    (pool, tool, fp)
}

/// Approves or rejects one waiting definition.
fn decide(pins: &Pins, query: &str, approve: bool) -> (StatusCode, Body) {
    let (Some(pool), Some(tool), Some(fp)) = target(query) else {
        let error = "give ?pool=NAME&tool=NAME&fingerprint=sha256:HEX";
        return (
            StatusCode::BAD_REQUEST,
            Body::Json(json!({ "error": error })),
        );
    };
    let Some(p) = pins.pool(&pool) else {
        let error = format!("no pinned pool {pool}");
        return (StatusCode::NOT_FOUND, Body::Json(json!({ "error": error })));
    };
    let decided = {
        let mut book = lock(&p.book);
        if approve {
            book.approve(&tool, &fp, now())
        } else {
            book.reject(&tool, &fp)
        }
    };
    let decision = if approve { "approved" } else { "rejected" };
    match decided {
        Ok(_) => {
            pins.saved(&p, Some(std::slice::from_ref(&tool)));
            pins.metrics
                .decisions
                .with_label_values(&[&pool, decision])
                .inc();
            audit_decision(&pins.audit, &pool, &tool, decision, &fp);
            let body = json!({"pool": pool, "tool": tool, "fingerprint": fp, "decision": decision});
            (StatusCode::OK, Body::Json(body))
        }
        Err(why) => {
            let status = if why == "no such tool" {
                StatusCode::NOT_FOUND
            } else {
                StatusCode::CONFLICT
            };
            (
                status,
                Body::Json(json!({ "error": why, "pool": pool, "tool": tool })),
            )
        }
    }
}

/// The pool's pins as a pins file: a line per pinned tool, with its definition when known.
fn export(pins: &Pins, query: &str) -> (StatusCode, Body) {
    let (Some(pool), _, _) = target(query) else {
        return (
            StatusCode::BAD_REQUEST,
            Body::Json(json!({"error": "give ?pool=NAME"})),
        );
    };
    let Some(p) = pins.pool(&pool) else {
        let error = format!("no pinned pool {pool}");
        return (StatusCode::NOT_FOUND, Body::Json(json!({ "error": error })));
    };
    let book = lock(&p.book);
    let mut text = format!("# tool pins of pool {pool}, exported by mcp-gateway\n");
    for (name, e) in &book.tools {
        let Some(pin) = &e.pin else { continue };
        let line = json!({
            "name": name,
            "fingerprint": pin.fingerprint,
            "definition": parsed(pin.definition.as_deref()),
        });
        text.push_str(&line.to_string());
        text.push('\n');
    }
    (StatusCode::OK, Body::Text(text))
}
