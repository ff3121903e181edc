//! Deadlines of exchanges with backends, the one mechanism that bounds every gateway-driven
//! exchange: a route's `limits.timeout-ms` or a tool's `tool-timeouts` entry
//! (`routing::Route::deadline`), counted from when the exchange starts, over its attempts
//! (`attempt.rs`), its relayed answer and, on both era bridges, the bridged exchange as a whole
//! (its rounds included). Past it the exchange is dropped (its upstream connection closed: the
//! backend sees the cancel) and the client gets -32012.

use tokio::time::Instant;

/// When a deadline of `after` that starts now passes (`None`: no deadline).
pub fn start(after: Option<std::time::Duration>) -> Option<Instant> {
    after.map(|d| Instant::now() + d)
}

/// Runs `fut` until the optional deadline; `None` when the deadline passed first. A plain
/// future, not an `async fn`: one of those would hold `fut` twice (as its argument and as
/// the future it awaits), and the requests it wraps are the largest futures on the path.
pub fn within<F: std::future::Future>(until: Option<Instant>, fut: F) -> Within<F> {
    match until {
        Some(at) => Within::Timed {
            fut: tokio::time::timeout_at(at, fut),
        },
        None => Within::Free { fut },
    }
}

pin_project_lite::pin_project! {
    /// A future run until an optional deadline ([`within`]).
    #[project = WithinProj]
    pub enum Within<F> {
        /// With a deadline.
        Timed { #[pin] fut: tokio::time::Timeout<F> },
        /// Without.
        Free { #[pin] fut: F },
    }
}

impl<F: std::future::Future> std::future::Future for Within<F> {
    type Output = Option<F::Output>;

    fn poll(
        self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Self::Output> {
        match self.project() {
            WithinProj::Timed { fut } => fut.poll(cx).map(Result::ok),
            WithinProj::Free { fut } => fut.poll(cx).map(Some),
        }
    }
}
