//! The access log: one line per completed request (target `turnstile::access`, inside the
//! request's span), with its route, status, refusal code and — for a served `/retrieve` — what
//! served it and where the time went.

use std::time::Instant;

use axum::response::Response;

use super::error::Rejected;

/// What served a `/retrieve` request (a response extension, for the access log).
#[derive(Debug, Clone, Copy)]
pub struct Served {
    /// The plugin generation that answered.
    pub generation: u64,
    /// The corpus generation it read.
    pub corpus_generation: u64,
    /// Time waiting for the lease.
    pub queue_ms: f64,
    /// The plugin call.
    pub execution_ms: f64,
    /// Outbound HTTP requests the call made.
    pub outbound_requests: u32,
    /// Their time, added up.
    pub outbound_ms: f64,
}

/// A response extension: the response's body writes the request's access line itself, when it
/// ends (a stream: its line says how it ended, with its timings).
#[derive(Debug, Clone, Copy)]
pub struct LoggedAtEnd;

/// Logs the line of a request of `route`, answered with `response`, that arrived at `started`.
pub fn log_access(
    span: &tracing::Span,
    route: &'static str,
    response: &Response,
    started: Instant,
) {
    let rejected = response.extensions().get::<Rejected>().map(|r| r.0);
    let served = response.extensions().get::<Served>();
    span.in_scope(|| {
        tracing::info!(
            target: "turnstile::access",
            route,
            status = response.status().as_u16(),
            error = rejected,
            generation = served.map(|s| s.generation),
            corpus_generation = served.map(|s| s.corpus_generation),
            queue_ms = served.map(|s| s.queue_ms),
            execution_ms = served.map(|s| s.execution_ms),
            outbound_requests = served.map(|s| s.outbound_requests).filter(|n| *n > 0),
            outbound_ms = served
                .filter(|s| s.outbound_requests > 0)
                .map(|s| s.outbound_ms),
            total_ms = started.elapsed().as_secs_f64() * 1e3,
            "request completed"
        );
    });
}

/// Logs the line of a request of `route` whose client left before its response was made:
/// status 499, `client_gone`.
pub fn log_gone(span: &tracing::Span, route: &'static str, started: Instant) {
    span.in_scope(|| {
        tracing::info!(
            target: "turnstile::access",
            route,
            status = 499u16,
            client_gone = true,
            total_ms = started.elapsed().as_secs_f64() * 1e3,
            "request completed"
        );
    });
}
