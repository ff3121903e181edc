//! What one request carries through the gateway: its context ([`ctx::RequestCtx`]: the
//! config snapshot it started with, its route, caller, outcome; a leaf every phase and
//! handler reads), the [`Gateway`] handle to the services every request reaches, and the
//! per-request metric families. Below the handlers and `proxy/`, above the concerns it holds.

mod audit;
pub mod ctx;
mod gateway;
pub mod metrics;

pub(crate) use gateway::{Gateway, Handled};
