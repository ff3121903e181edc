//! The errors the gateway answers about tasks itself (the table in docs/errors.md; the one
//! writer is `error/http.rs`).

use crate::error::{ErrorKind, GatewayError};

/// Why a recorded task cannot be reached (`data.reason` of -32038).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lost {
    /// Its pod left the pool, or refuses connections (it died).
    BackendGone,
    /// Its pod answers that it does not know the task (it restarted and forgot it).
    Forgotten,
    /// A legacy task: the session moved to another pod since the task was created.
    SessionMoved,
}

impl Lost {
    /// `data.reason`.
    pub fn reason(self) -> &'static str {
        match self {
            Lost::BackendGone => "backend-gone",
            Lost::Forgotten => "forgotten",
            Lost::SessionMoved => "session-moved",
        }
    }
}

impl GatewayError {
    /// A task the gateway recorded that cannot be reached any more. The pod's address is not
    /// said (`pool` is).
    pub fn task_lost(pool: &str, task_id: &str, why: Lost) -> Self {
        let how = match why {
            Lost::BackendGone => "the backend that held it is gone",
            Lost::Forgotten => "the backend that held it no longer knows it (it restarted)",
            Lost::SessionMoved => {
                "the session moved to another backend after the one that held it failed"
            }
        };
        Self::new(
            ErrorKind::TaskLost,
            format!("The task `{task_id}` was lost: {how}; its result cannot be read, and it cannot be updated or cancelled. Start the work again to get a new task"),
        )
        .with("reason", why.reason())
        .with("taskId", task_id)
        .with("pool", pool)
    }

    /// A `params.taskId` longer than `tasks.max-id-bytes`.
    pub fn task_id_too_long(limit: usize) -> Self {
        Self::new(
            ErrorKind::InvalidParams,
            format!("Invalid params: params.taskId is longer than {limit} bytes"),
        )
        .with("reason", "task-id-too-long")
        .with("limit", limit as u64)
    }

    /// A Tasks extension method on a pool of legacy backends (the reverse bridge): their
    /// tasks are another protocol, and no task of theirs was ever handed to this client.
    pub fn tasks_not_bridged(method: &str) -> Self {
        Self::new(
            ErrorKind::NotBridged,
            format!("`{method}` cannot be bridged to legacy (2025-11-25) servers: the Tasks extension has no translation to their tasks, and no task of theirs was handed out here"),
        )
        .with("method", method)
        .with("reason", "tasks-extension")
    }

    /// A task method without a `params.taskId` string.
    pub fn task_id_missing(method: &str) -> Self {
        Self::new(
            ErrorKind::InvalidParams,
            format!("Invalid params: `{method}` needs params.taskId, a string"),
        )
        .with("reason", "task-id-missing")
    }
}
