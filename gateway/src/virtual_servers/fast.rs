//! A 2026-07-28 call on a virtual route on pingora's own pipeline, as a plain route's fast
//! path serves a call: the member found from `Mcp-Name` alone, the body held back and checked
//! against the client's headers as `check-headers` does, then sent to the member's pod with
//! the member's own name put back in it (`mcp_wire::rewrite`, every other byte kept) and in
//! `Mcp-Name`; the answer streams back untouched.
//!
//! Taken only where the header decides as the body will: a `tools/call` or `prompts/get` on a
//! route that checks headers, whose exposed name the names map resolves without asking the
//! members' lists, on a member route the fast path serves (a stateless or auto member of a
//! 2026-07-28 pool, no deadline, no filter reading the body). Everything else takes the
//! gateway-driven path (`serve`), which reads the body first.

use crate::config::{Kind, Mode};
use crate::error::GatewayError;
use crate::federation::names::Resolved;
use crate::request::ctx::{Native, RequestCtx};
use crate::routing::{Members, Route};
use bytes::Bytes;
use mcp_wire::headers::McpHeaders;
use mcp_wire::Era;
use pingora::http::RequestHeader;
use pingora_prometheus::prometheus::IntCounterVec;
use std::borrow::Cow;
use std::sync::Arc;

/// The member a call goes to, and the name it is known by there.
#[derive(Debug)]
pub struct Rename {
    /// The virtual route, whose label its metrics carry.
    route: Arc<Route>,
    /// The member's position in it.
    member: usize,
    /// The member's own name where it differs from the exposed one (a prefix, a rename).
    own: Option<String>,
    /// Where the name is in the body (`params.name`).
    path: &'static [&'static str],
    /// The length of the body the member gets, when the client declared its own: the exposed
    /// name written as JSON writes it (the shortest form) swapped for the member's. A name the
    /// client escaped needlessly is longer in its body, so the body for the member is never
    /// longer than this, and is made up to it with trailing whitespace (which JSON allows):
    /// the member gets a `Content-Length`, not chunks (a chunked body costs pingora a second
    /// write, the last chunk, and the member a second read).
    length: Option<u64>,
}

/// The fast path's plan for a call on the virtual route `route`, when it can take one; `client`:
/// the client's headers (whose caller's names map resolves the call); `head`:
/// whether the request is a POST, its declared length, and whether it carries `Mcp-Param-*`
/// headers (a renamed call with some takes the gateway-driven path).
pub(crate) fn plan(
    ctx: &RequestCtx,
    route: &Arc<Route>,
    members: &Members,
    headers: &McpHeaders<'_>,
    client: &http::HeaderMap,
    head: (bool, Option<u64>, bool),
) -> Option<Native> {
    let (Some(method), Some(exposed)) = (headers.method.as_deref(), headers.name.as_deref()) else {
        return None;
    };
    let (post, declared, mirrors) = head;
    let kind = match method {
        "tools/call" => Kind::Tool,
        "prompts/get" => Kind::Prompt,
        _ => return None,
    };
    if ctx.era != Era::Stateless
        || !post
        || !route.check_headers
        || route.guard.reads_body(Some(method))
    {
        return None;
    }
    let principal = ctx.principal.as_deref().map(|p| &*p.id);
    let map = members
        .names
        .of(members.names.caller(principal, client).as_deref());
    let Resolved::Member(i, own) = crate::sync::read(&map).resolve(kind, exposed) else {
        return None;
    };
    let to = members.routes.get(i)?;
    let served_fast = matches!(to.mode, Mode::Stateless | Mode::Auto)
        && to.deadline(Some(method), Some(&own)).is_none();
    if !served_fast {
        return None;
    }
    let pool = ctx.state.pool(to.pool_for(Some(method), Some(&own))).ok()?;
    if ctx.state.pins.pinned(&pool.name) {
        // the member's pins check the call by the member's own name, on its route
        return None;
    }
    if crate::classify::takes(ctx, &pool) || crate::upstream::era::require(&pool, ctx.era).is_err()
    {
        // the gateway-driven path answers these (the bridge, or the member's error)
        return None;
    }
    if own != exposed && mirrors {
        // the member gets another body than the client sent (its own name): the gateway-driven
        // path sends the `Mcp-Param-*` headers of the member's schema instead of the client's
        return None;
    }
    let length = declared.and_then(|n| {
        let quoted = |s: &str| serde_json::to_string(s).map_or(0, |q| q.len() as u64);
        (n.checked_sub(quoted(exposed))?).checked_add(quoted(&own))
    });
    let rename = Rename {
        route: route.clone(),
        member: i,
        path: mcp_wire::rewrite::name_path(method, None)?,
        own: (own != exposed).then_some(own),
        length,
    };
    let mut native = Native::new(to.clone(), pool, true);
    native.rename = Some(Box::new(rename));
    Some(native)
}

impl crate::request::ctx::Rename for Rename {
    fn member(&self) -> &str {
        let members = self.route.members.as_ref();
        members.map_or("", |m| m.server.members[self.member].names.name.as_str())
    }

    /// Chunked framing when the client declared no length.
    fn head(&self, upstream: &mut RequestHeader) -> Result<(), GatewayError> {
        let Some(own) = &self.own else {
            return Ok(());
        };
        let value = mcp_wire::headers::encode_value(own);
        let set = |h: &mut RequestHeader| -> pingora::Result<()> {
            h.insert_header(mcp_wire::headers::MCP_NAME, value)?;
            match self.length {
                Some(n) => h.insert_header(http::header::CONTENT_LENGTH, n)?,
                None => {
                    h.remove_header(&http::header::CONTENT_LENGTH);
                    h.insert_header(http::header::TRANSFER_ENCODING, "chunked")?;
                }
            }
            Ok(())
        };
        set(upstream).map_err(|_| GatewayError::internal("Mcp-Name could not be set"))
    }

    /// The member's own name goes where the exposed one was: spliced in where the check found
    /// it when the body wrote it without escapes, without parsing the body again.
    fn body(
        &self,
        body: &Bytes,
        checked: Option<&Cow<'_, str>>,
        events: &IntCounterVec,
    ) -> Result<Bytes, GatewayError> {
        events
            .with_label_values(&[self.route.label.as_str(), self.member(), "routed"])
            .inc();
        let Some(own) = &self.own else {
            return Ok(body.clone());
        };
        let spliced = match checked {
            Some(Cow::Borrowed(at)) => mcp_wire::rewrite::splice_string(body, at, own),
            _ => None,
        };
        let mut out = spliced
            .or_else(|| mcp_wire::rewrite::replace_string(body, self.path, own))
            .ok_or_else(|| GatewayError::internal("the routed name could not be rewritten"))?;
        if let Some(n) = self.length {
            let n = usize::try_from(n).unwrap_or(usize::MAX);
            if out.len() > n {
                return Err(GatewayError::internal("the routed name outgrew its length"));
            }
            out.resize(n, b' ');
        }
        Ok(Bytes::from(out))
    }
}
