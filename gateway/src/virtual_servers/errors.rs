//! The errors a virtual route answers itself (the table in docs/errors.md; the one writer
//! is `error/http.rs`).

use crate::error::{ErrorKind, GatewayError};
use crate::federation::cursor::Refusal;

impl GatewayError {
    /// No member exposes `name` (a tool or prompt) or owns it (a resource URI).
    pub fn unknown_name(server: &str, kind: &str, name: &str) -> Self {
        Self::new(
            ErrorKind::UnknownName,
            format!("The virtual server `{server}` has no {kind} `{name}`: list them to see the names it exposes"),
        )
        .with("server", server)
        .with("nameKind", kind)
        .with("name", name)
        .with("reason", "unknown-name")
    }

    /// A task request on a virtual route naming a task no member holds for this caller: none
    /// was recorded, it expired, or it is another caller's (answered alike, byte for byte).
    pub fn unknown_task(server: &str, task_id: &str) -> Self {
        Self::new(
            ErrorKind::UnknownName,
            format!("The virtual server `{server}` holds no task `{task_id}` for you: none of its members created it for this caller, or it expired"),
        )
        .with("server", server)
        .with("nameKind", "task")
        .with("name", task_id)
        .with("reason", "unknown-task")
    }

    /// A list request's `cursor` that this virtual server did not give this caller.
    pub fn bad_cursor(refusal: Refusal) -> Self {
        let detail = match refusal {
            Refusal::Forged => "it was not issued by this gateway, or was changed",
            Refusal::OtherServer => "it was issued by another virtual server",
            Refusal::OtherPrincipal => "it was issued to another caller",
        };
        Self::new(
            ErrorKind::InvalidParams,
            format!("Invalid params: the cursor cannot be used: {detail}; start again without one"),
        )
        .with("reason", refusal.reason())
    }

    /// A method a virtual route does not serve (yet): `subscriptions/listen`, a legacy
    /// client's task methods.
    pub fn not_on_virtual_route(method: &str) -> Self {
        Self::new(
            ErrorKind::NotBridged,
            format!("`{method}` is not served on virtual routes yet: call it on a plain route of the member's pool"),
        )
        .with("method", method)
        .with("reason", "not-on-virtual-route")
    }
}
