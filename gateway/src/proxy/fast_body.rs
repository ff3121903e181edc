//! The fast path's request body, chunk by chunk: counted against `max-body-bytes` as it
//! streams (its first chunk kept for capture); where `check-headers` compares it with the MCP
//! headers, held back until its end (collected once, `collect.rs`), checked whole, and handed
//! on: as it came, or with a virtual member's own name in it (`virtual_route::Rename`).

use super::native::native;
use crate::error::GatewayError;
use crate::forward::check::{self, Rejected};
use crate::forward::{collect, respond};
use crate::request::ctx::RequestCtx;
use bytes::Bytes;
use pingora::prelude::*;
use pingora_prometheus::prometheus::IntCounterVec;

/// pingora's `request_body_filter` for the fast path; `events` counts a virtual member's
/// routed calls.
pub(super) fn filter(
    events: &IntCounterVec,
    session: &Session,
    body: &mut Option<Bytes>,
    end_of_stream: bool,
    ctx: &mut RequestCtx,
) -> Result<()> {
    let max = ctx.state.config.max_body_bytes;
    let first_chunk = ctx.body_prefix.is_none();
    let fast = native(ctx)?;
    if let Some(chunk) = body.as_ref() {
        fast.body_seen += chunk.len() as u64;
        let (seen, keep) = (fast.body_seen, first_chunk && !fast.check_body);
        if keep {
            ctx.body_prefix = Some(chunk.clone());
        }
        if seen > max {
            return Err(respond::stashed(ctx, GatewayError::body_too_large(max)));
        }
    }
    let native = native(ctx)?;
    if !native.check_body {
        return Ok(());
    }
    if let Some(chunk) = body.take() {
        let declared = || collect::declared(&session.req_header().headers);
        collect::append(&mut native.body, chunk, declared, max);
    }
    if !end_of_stream {
        *body = respond::hold();
        return Ok(());
    }
    let full = std::mem::take(&mut native.body).freeze();
    match check::check_body(&session.req_header().headers, &full) {
        Ok(info) => {
            let declares_tasks = info.declares_tasks;
            // a call on a virtual route: the member's own name, once the exposed one is checked
            let sent = match native.rename.as_deref() {
                Some(rename) => rename.body(&full, info.name.as_ref(), events),
                None => Ok(full.clone()),
            };
            drop(info);
            ctx.declares_tasks = Some(declares_tasks);
            ctx.body_prefix = Some(full);
            *body = Some(sent.map_err(|e| respond::stashed(ctx, e))?);
            Ok(())
        }
        Err(rejected) => {
            let Rejected { id, error } = *rejected;
            ctx.request_id = id;
            Err(respond::stashed(ctx, error))
        }
    }
}
