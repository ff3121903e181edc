//! Legacy (2025-11-25) tasks inside sessions: recorded with the session's binding
//! generation, refused as lost once the session moved off it.

use crate::downstream::client::Client;
use crate::error::GatewayError;
use crate::forward::watch::watch_for;
use crate::request::{ctx::RequestCtx, Gateway};
use crate::tasks::errors::Lost;
use crate::tasks::Found;
use crate::upstream::Pool;
use pingora::prelude::*;

/// The scope of a legacy session's tasks: the gateway session (a legacy task lives in its
/// session).
fn session_scope(session_id: &str) -> String {
    format!("session:{session_id}")
}

/// The legacy methods that name a task of the session.
pub(crate) fn legacy_task_method(method: Option<&str>) -> bool {
    matches!(method, Some("tasks/get" | "tasks/result" | "tasks/cancel"))
}

/// Starts watching a legacy session's `tools/call` answer for a (2025-11-25) task handle,
/// recorded with the session's binding generation.
pub(crate) fn watch_in_session(
    gw: &Gateway,
    session: &mut impl Client,
    ctx: &RequestCtx,
    pool: &Pool,
    rec: &crate::session::SessionRecord,
) {
    if !ctx.state.config.tasks.enabled || ctx.method_label != "tools/call" {
        return;
    }
    let scope = session_scope(&rec.id).into();
    let generation = Some(rec.binding.generation);
    watch_for(
        gw,
        session,
        ctx,
        scope,
        (pool, None),
        rec.binding.backend,
        generation,
    );
}

/// A legacy task request of a session whose task was created under another binding (the
/// session moved since, so the pod that held the task is gone): the error to answer, and the
/// generation the task was created under (the session may move during this very request:
/// checked again once it was forwarded, [`moved_since`]).
pub(crate) async fn legacy_task(
    gw: &Gateway,
    ctx: &RequestCtx,
    pool: &Pool,
    rec: &crate::session::SessionRecord,
    (method, task_id): (Option<&str>, Option<&str>),
) -> Result<Option<u64>, GatewayError> {
    let (true, true, Some(task_id)) = (
        ctx.state.config.tasks.enabled,
        legacy_task_method(method),
        task_id,
    ) else {
        return Ok(None);
    };
    let found = gw
        .tasks
        .find(
            &ctx.state.config.tasks,
            &session_scope(&rec.id),
            task_id,
            rec.principal.as_ref(),
        )
        .await
        .map_err(GatewayError::from)?;
    let Found::Mine(task) = found else {
        return Ok(None);
    };
    match task.generation {
        Some(g) if g != rec.binding.generation => {
            gw.tasks.count(&pool.name, "lost");
            Err(GatewayError::task_lost(
                &pool.name,
                task_id,
                Lost::SessionMoved,
            ))
        }
        other => Ok(other),
    }
}

/// After forwarding a legacy task request: the error to answer instead when the session moved
/// off the binding the task was created under.
pub(crate) fn moved_since(
    gw: &Gateway,
    pool: &Pool,
    rec: &crate::session::SessionRecord,
    created_under: Option<u64>,
    task_id: Option<&str>,
) -> Option<GatewayError> {
    let g = created_under?;
    if g == rec.binding.generation {
        return None;
    }
    gw.tasks.count(&pool.name, "lost");
    let task_id = task_id.unwrap_or_default();
    Some(GatewayError::task_lost(
        &pool.name,
        task_id,
        Lost::SessionMoved,
    ))
}
