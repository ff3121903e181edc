//! The sizes of the request path's futures, printed (`cargo test -p mcp-gateway --lib
//! future_sizes -- --nocapture`) and kept under a budget. A future's size is what every move
//! of it copies (into a `Box::pin`, into a caller's state machine): a cold branch awaited
//! inline makes the hot path pay for it on every request. Cold branches are boxed where they
//! are awaited, so the hot path's futures hold a pointer to them.

use std::future::Future;
use std::mem::size_of;

fn of2<A, B, F: Future>(_: impl FnOnce(A, B) -> F) -> usize {
    size_of::<F>()
}
fn of3<A, B, C, F: Future>(_: impl FnOnce(A, B, C) -> F) -> usize {
    size_of::<F>()
}
fn of4<A, B, C, D, F: Future>(_: impl FnOnce(A, B, C, D) -> F) -> usize {
    size_of::<F>()
}
fn of5<A, B, C, D, E, F: Future>(_: impl FnOnce(A, B, C, D, E) -> F) -> usize {
    size_of::<F>()
}
pub(crate) fn of6<A, B, C, D, E, G, F: Future>(_: impl FnOnce(A, B, C, D, E, G) -> F) -> usize {
    size_of::<F>()
}
#[allow(clippy::many_single_char_names)]
fn of7<A, B, C, D, E, G, H, F: Future>(_: impl FnOnce(A, B, C, D, E, G, H) -> F) -> usize {
    size_of::<F>()
}

/// Each hot-path future with its size in bytes.
fn sizes() -> Vec<(&'static str, usize)> {
    use crate::forward::{relay, respond};
    use crate::handlers::{stateful, stateless};
    use crate::proxy::{authn, steps};
    use pingora::proxy::Session;
    vec![
        ("steps::prepare", of3(steps::prepare)),
        ("authn::authenticate", of3(authn::authenticate::<Session>)),
        ("respond::answer", of3(respond::answer::<Session>)),
        ("stateful::handle", of4(stateful::handle::<Session>)),
        (
            "stateful::stream_or_delete",
            of4(stateful::stream_or_delete::<Session>),
        ),
        (
            "stateful::in_session::call",
            stateful::in_session_call_size(),
        ),
        (
            "stateless::forward_buffered",
            of5(stateless::forward_buffered::<Session>),
        ),
        (
            "stateless::forward_any",
            of5(crate::forward::send::forward_any::<Session>),
        ),
        (
            "stateless::refuse_backend_session",
            of7(crate::forward::send::refuse_backend_session),
        ),
        ("relay::relay", of5(relay::relay::<Session>)),
        ("relay::read_body", of2(relay::read_body::<Session>)),
        (
            "SessionManager::forward",
            of4(crate::session::SessionManager::forward),
        ),
        ("Engine::send", of6(crate::upstream::attempt::Engine::send)),
        (
            "UpstreamClient::send",
            of5(crate::upstream::client::UpstreamClient::send),
        ),
        (
            "Exchange (not a future)",
            size_of::<crate::upstream::client::Exchange>(),
        ),
        (
            "RequestCtx (not a future)",
            size_of::<crate::request::ctx::RequestCtx>(),
        ),
    ]
}

/// The hot path's budgets (bytes; about 1.4x the sizes measured when the cold branches were
/// boxed, with rustc 1.95). Before: `prepare` 12,056 (the JWT key fetch inline), a call in a
/// session 32,952, `SessionManager::forward` 14,424, `Engine::send` 10,960. Then, with the
/// exchange's connection inline (1,184 bytes, moved through every caller) and an `async`
/// release (its future holding the session three times): a call in a session 11,448,
/// `SessionManager::forward` 7,552, `Engine::send` 2,992; boxed and synchronous: 4,016, 2,376,
/// 1,200.
const BUDGETS: &[(&str, usize)] = &[
    ("steps::prepare", 1024),
    ("authn::authenticate", 1024),
    ("stateful::handle", 6 * 1024 + 512),
    // held as long as a session's GET stream (3,616 in a debug build on 2026-12-06; the GET
    // went through `stateful::handle` before, holding its 4.4 KB and a boxed branch of 4.8 KB)
    ("stateful::stream_or_delete", 4 * 1024 + 512),
    ("stateful::in_session::call", 6 * 1024),
    ("stateless::forward_buffered", 8 * 1024),
    ("SessionManager::forward", 3 * 1024 + 512),
    ("Engine::send", 2 * 1024),
    ("UpstreamClient::send", 1024),
    ("Exchange (not a future)", 64),
];

#[test]
fn the_request_paths_futures_stay_within_their_budgets() {
    let sizes = sizes();
    for (name, size) in &sizes {
        println!("{size:>8}  {name}");
    }
    for (name, budget) in BUDGETS {
        let size = sizes.iter().find(|(n, _)| n == name).map(|(_, s)| *s);
        let size = size.expect("every budget names a measured future");
        assert!(
            size <= *budget,
            "{name} is {size} bytes, over its budget of {budget}: box the cold branch that grew it"
        );
    }
}
