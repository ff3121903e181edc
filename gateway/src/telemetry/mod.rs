//! OpenTelemetry traces (`tracing:` in the config, off unless set): a span per request that
//! continues the client's W3C `traceparent`/`tracestate` (or starts a trace), carries MCP
//! attributes, shows a session's re-initialization as child spans and an event, and is
//! propagated upstream in `traceparent`; exported by OTLP (http/protobuf or gRPC) in batches
//! from a thread of the SDK's own. Spans are started and ended at a request's start and end,
//! never on the byte path of a body.
//!
//! The tracer is process-wide (a `OnceLock`), as OpenTelemetry's API is: the session manager
//! adds re-initialization spans to whatever request is current (`Context::current()`, set
//! while a gateway-driven request is polled) without the proxy handing it down.

mod export;
mod span;
mod tracer;

pub use span::{child, event, finish, inject, inject_current, start, Finished};
pub use tracer::{init, FlushAtShutdown};

#[cfg(test)]
mod tests;
