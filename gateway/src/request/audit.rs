//! A request's part of an audit record: [`Record::caller_from`] (the record type is
//! `audit/`'s; the request context is this folder's, so the glue lives here).

use crate::audit::Record;
use crate::request::ctx::RequestCtx;

impl Record {
    /// The route, the caller (the authenticated principal: ids, `client_id` and the `act`
    /// chain, no credential) and the trace id of the request `ctx` is.
    pub fn caller_from(self, ctx: &RequestCtx) -> Record {
        let record = match ctx.route.as_ref() {
            Some(route) => self.route(&route.label),
            None => self,
        };
        let record = record
            .principal(ctx.principal.as_deref())
            .trace_id(&ctx.trace_id);
        match ctx.otel.as_ref() {
            Some(cx) => {
                use opentelemetry::trace::TraceContextExt;
                let span = cx.span().span_context().clone();
                match span.is_valid() {
                    true => record.otel_trace_id(span.trace_id().to_string()),
                    false => record,
                }
            }
            None => record,
        }
    }
}
