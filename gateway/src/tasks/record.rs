//! What the gateway knows of one task: [`TaskRecord`] (where it lives, whose it is), what a
//! lookup found ([`Found`]), and the keys records are kept under ([`key`], per scope and
//! principal) and counted in ([`owner`]). A leaf: the store, the misses cache and the rest of
//! `tasks/` read it.

use serde::{Deserialize, Serialize};
use std::net::SocketAddr;
use std::sync::Arc;

/// Where one task lives.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TaskRecord {
    /// The pool of the backend that created it.
    pub pool: String,
    /// That backend.
    pub backend: SocketAddr,
    /// The principal that created it (`auth`); `None`: an anonymous caller.
    pub principal: Option<Arc<str>>,
    /// Whose share of `tasks.max-per-principal` it counts in: the principal, or an anonymous
    /// caller's peer address (IPv6 by /64).
    pub owner: Arc<str>,
    /// When the record expires (ms since the epoch).
    pub expires_ms: u64,
    /// A legacy task: the generation of the session binding it was created under (the
    /// session moved since when the binding is newer).
    pub generation: Option<u64>,
    /// Its pod reported it ended (`completed`, `failed`, `cancelled`): its result may still be
    /// read there until it expires, but a draining pod no longer waits for it.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub ended: bool,
    /// On a virtual route, the member that answered (two members may share a pool with other
    /// paths: the pool alone does not say which route the pod's task lives behind).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub member: Option<Arc<str>>,
}

/// What the gateway knows of a task a request names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Found {
    /// No record: the request goes wherever a request would go.
    Unknown,
    /// Another principal's task: answered exactly as an unknown one, never sent to its pod.
    Foreign,
    /// The caller's task.
    Mine(Arc<TaskRecord>),
}

/// The key of a task record: its scope (the client-facing route's label; for a legacy task,
/// its gateway session), whose it is (the principal; `-` for anonymous callers) and the
/// server's id. Servers number tasks per pod (`task-1` on every pod): two principals' tasks
/// with one id are two records, each reaching its own pod (issue 48, item 3).
pub fn key(scope: &str, principal: Option<&Arc<str>>, task_id: &str) -> Arc<str> {
    // on every task request: built directly (the formatting machinery costs more than the key)
    use std::fmt::Write as _;
    let who = principal.map_or("", |p| p);
    // the length's digits fit in 20 bytes
    let mut key = String::with_capacity(scope.len() + who.len() + task_id.len() + 24);
    key.push_str(scope);
    key.push('\n');
    match principal {
        // a length first: no principal can end where an id begins
        Some(_) => {
            let _ = write!(key, "{}:", who.len());
            key.push_str(who);
        }
        None => key.push('-'),
    }
    key.push('\n');
    key.push_str(task_id);
    key.into()
}

/// The key of the latest record of `task_id` in `scope`, whoever's it is: another principal's
/// request for that id is answered as unknown without reaching the pod that holds it. Its
/// middle part is empty, which no [`key`] has.
pub(super) fn claim_key(scope: &str, task_id: &str) -> Arc<str> {
    let mut key = String::with_capacity(scope.len() + 2 + task_id.len());
    key.push_str(scope);
    key.push_str("\n\n");
    key.push_str(task_id);
    key.into()
}

/// The share a record counts in: the principal, else the caller's address.
pub fn owner(principal: Option<&Arc<str>>, peer: Option<std::net::IpAddr>) -> Arc<str> {
    match (principal, peer) {
        (Some(p), _) => p.clone(),
        (None, Some(ip)) => format!("peer:{}", crate::downstream::cap::client_of(ip)).into(),
        (None, None) => "peer:-".into(),
    }
}
