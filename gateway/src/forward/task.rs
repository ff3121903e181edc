//! A task's request (`tasks/get`, `tasks/update`, `tasks/cancel`) through the one sender, for
//! the routing of `handlers/tasks/`: to the pod that holds the task, once ([`To::Pod`]), or to
//! any backend of the pool as any request ([`To::Any`]: another principal's task, sent with a
//! stand-in id), under the route's deadline like every gateway-driven exchange
//! (`upstream::deadline`: `limits.timeout-ms`, `limits.tool-timeouts`), its answer relayed as
//! it streams (`relay.rs`) through the caller's [`Reshape`] (held while it may be the pod's
//! "unknown task", or the stand-in id put back as it passes). Past the deadline the exchange is
//! dropped (its connection closed: the backend sees the cancel) and the client gets -32012 with
//! the request's id: the whole answer when it heard nothing yet, else as any relayed answer
//! past its deadline ends (`relay::end_with_error`).
//!
//! The answer is asked for as it is (`Accept-Encoding: identity`), since the reshaper reads
//! it; one a backend encodes anyway is read whole within [`ANSWER_LIMIT`] and decoded first.

use crate::downstream::client::Client;
use crate::error::{Fail, GatewayError};
use crate::forward::relay::{client_response, end_with_error, relay_reshaped, Relayed, Reshape};
use crate::request::ctx::RequestCtx;
use crate::request::Gateway;
use crate::routing::Route;
use crate::upstream::attempt::{Pick, Step};
use crate::upstream::client::{CallError, Exchange};
use crate::upstream::deadline::{self, within};
use crate::upstream::encoding;
use crate::upstream::request::{self, Target};
use crate::upstream::{Backend, Pool};
use bytes::Bytes;
use mcp_wire::RequestId;
use pingora::http::RequestHeader;
use std::sync::Arc;
use std::time::Duration;

/// The largest task answer in a coding the gateway did not ask for that it reads whole (to
/// decode it for the reshaper): the task's result is in it.
pub const ANSWER_LIMIT: usize = 16 * 1024 * 1024;

/// Where a task's request goes.
pub(crate) enum To<'a> {
    /// The pod holding the task, once: no other pod knows it.
    Pod(&'a Arc<Backend>),
    /// Any backend of the pool, as any request (another one after a refused connection), with
    /// `Mcp-Name` naming `name` (the stand-in of the client's task id in the body).
    Any {
        /// What `Mcp-Name` says.
        name: &'a str,
    },
}

/// A task's request on its way: its body read (and rewritten where it must be).
pub(crate) struct TaskRequest<'a> {
    /// The route it goes out on (its upstream path).
    pub route: &'a Route,
    /// The pool it goes to.
    pub pool: &'a Arc<Pool>,
    /// The whole body.
    pub body: Bytes,
    /// The route's deadline for the whole exchange (`classify::Routed::deadline`).
    pub deadline: Option<Duration>,
}

/// What became of a task's request.
pub(crate) enum Sent {
    /// Its answer went to the client (or ended as a relayed answer ends: cut, past its deadline).
    Relayed,
    /// The pod could not be reached, or its connection broke before it answered ([`To::Pod`]
    /// only): nothing was written.
    Unreachable,
}

/// Sends a task's request to `to` under its deadline and relays the answer through `reshape`.
pub(crate) async fn send<C: Client>(
    gw: &Gateway,
    session: &mut C,
    ctx: &mut RequestCtx,
    req: TaskRequest<'_>,
    to: To<'_>,
    reshape: &mut dyn Reshape,
) -> Result<Sent, Fail> {
    let until = deadline::start(req.deadline);
    let pool = req.pool;
    let timed_out = |ctx: &RequestCtx| {
        let backend = ctx.tried.last().map(|a| a.to_string()).unwrap_or_default();
        GatewayError::deadline(&pool.name, &backend, req.deadline.unwrap_or_default())
    };
    let era = ctx.era;
    let asked = exchange(gw, session.req_header(), &mut ctx.tried, era, &req, to);
    let Some(asked) = within(until, asked).await else {
        return Err(timed_out(ctx).into());
    };
    let Some((mut ex, backend)) = asked? else {
        return Ok(Sent::Unreachable);
    };
    ctx.backend = Some(backend.clone());
    let id = ctx.request_id.clone().unwrap_or_else(RequestId::null);
    if encoding::is_encoded(ex.header()) {
        let Some(whole) = within(until, decoded(&mut ex, session, reshape)).await else {
            return Err(timed_out(ctx).into());
        };
        whole.map_err(|_| GatewayError::backend_lost(&pool.name, &backend.label))??;
        gw.engine.release(ex);
        return Ok(Sent::Relayed);
    }
    let head = client_response(ex.header(), None);
    match relay_reshaped(&mut ex, session, head, until, reshape).await? {
        Relayed::Done => gw.engine.release(ex),
        Relayed::TimedOut { sse } => end_with_error(session, sse, &timed_out(ctx), &id).await?,
        Relayed::Broken { sse } => {
            let e = GatewayError::backend_lost(&pool.name, &backend.label);
            end_with_error(session, sse, &e, &id).await?;
        }
    }
    Ok(Sent::Relayed)
}

/// An answer in a coding the gateway did not ask for: read whole within [`ANSWER_LIMIT`],
/// decoded (one it cannot decode passes as it is), reshaped and written whole. `Err`: the
/// upstream answer could not be read; `Ok(Err)`: the client could not be written to.
async fn decoded(
    ex: &mut Exchange,
    session: &mut impl Client,
    reshape: &mut dyn Reshape,
) -> pingora::Result<Result<(), Fail>> {
    let mut head = client_response(ex.header(), None);
    let mut answer = ex.read_all(ANSWER_LIMIT).await?;
    let _ = encoding::decode_in_place(&mut head, &mut answer, ANSWER_LIMIT);
    reshape.head(&mut head);
    let mut out = bytes::BytesMut::new();
    out.extend_from_slice(&reshape.chunk(answer).unwrap_or_default());
    out.extend_from_slice(&reshape.end().unwrap_or_default());
    let out = out.freeze();
    encoding::decoded_head(&mut head, out.len());
    let written = crate::downstream::answer::whole(session, head, out).await;
    Ok(written.map_err(Fail::from))
}

/// The exchange of a task's request: its answer's head in, with the backend that answered;
/// `None` when the one pod of [`To::Pod`] could not be reached.
async fn exchange(
    gw: &Gateway,
    client: &RequestHeader,
    tried: &mut Vec<std::net::SocketAddr>,
    era: mcp_wire::Era,
    req: &TaskRequest<'_>,
    to: To<'_>,
) -> Result<Option<(Exchange, Arc<Backend>)>, GatewayError> {
    let path = req.route.upstream_path(client.uri.path());
    let (pool, engine, body) = (req.pool, gw.engine.as_ref(), &req.body);
    let head = |b: &Backend, name: Option<&str>| upstream_head(client, pool, b, &path, body, name);
    let name = match to {
        To::Pod(b) => {
            tried.push(b.addr);
            return match engine
                .send(pool, b, &head(b, None)?, body.clone(), false)
                .await
            {
                Ok(ex) => Ok(Some((ex, b.clone()))),
                Err(CallError::Credentials(e)) => Err(*e),
                Err(CallError::Connect(_) | CallError::Lost(_)) => Ok(None),
            };
        }
        To::Any { name } => name,
    };
    let head = &head;
    let sent = engine
        .each_backend(pool, Pick::sessionless(era), tried, |b| {
            Box::pin(async move {
                let req = match head(&b, Some(name)) {
                    Ok(req) => req,
                    Err(e) => return Step::Stop(e),
                };
                match engine.send(pool, &b, &req, body.clone(), true).await {
                    Ok(ex) => Step::Done((ex, b)),
                    Err(CallError::Connect(_)) => Step::Unreachable,
                    Err(CallError::Lost(_)) => Step::Lost,
                    Err(CallError::Credentials(e)) => Step::Stop(*e),
                }
            })
        })
        .await?;
    Ok(Some(sent))
}

/// The client's request re-addressed to `backend`, with the pool's identity headers, its
/// answer asked for as it is, and `Mcp-Name` naming `name` when given.
fn upstream_head(
    client: &RequestHeader,
    pool: &Pool,
    backend: &Backend,
    path: &str,
    body: &Bytes,
    name: Option<&str>,
) -> Result<RequestHeader, GatewayError> {
    let target = Target {
        path,
        host: &backend.host_header,
    };
    let mut req = request::forwarded(client, target, None, Some(body.len()))?;
    request::identify(&mut req, pool);
    let _ = req.insert_header(http::header::ACCEPT_ENCODING, "identity");
    if let Some(name) = name {
        // `Mcp-Name` must name the stand-in too (a server checks it against the body)
        req.remove_header(mcp_wire::headers::MCP_NAME);
        let _ = req.insert_header(mcp_wire::headers::MCP_NAME, name);
    }
    Ok(req)
}
