//! The `request` span: everything logged while a request is handled, on the async side and on
//! its worker thread, is inside it, and so carries the request's ids and route. With traces on,
//! it is the request's server span too (`otel.*`, `trace_id`: recorded by the request's scope) —
//! except on the routes machines ask all the time ([`UNTRACED_ROUTES`]: health probes, the
//! metrics scrape), whose spans the log has but traces never take.

use axum::extract::Request;

use super::request_id::RequestId;
use crate::traces::UNTRACED_TARGET;

/// Routes whose requests are never traced: a load balancer's probes and Prometheus's scrapes
/// would be most of a trace store's spans and answer none of its questions.
pub const UNTRACED_ROUTES: [&str; 3] = ["/healthz", "/readyz", "/metrics"];

/// The span of one request, under `target` (the same fields whatever the target).
macro_rules! span_under {
    ($target:expr, $id:expr, $request:expr, $route:expr) => {
        tracing::info_span!(
            target: $target,
            "request",
            request_id = $id.number,
            x_request_id = $id.header.to_str().unwrap_or_default(),
            method = %$request.method(),
            path = $request.uri().path(),
            route = $route,
            generation = tracing::field::Empty,
            corpus_generation = tracing::field::Empty,
            outbound_requests = tracing::field::Empty,
            outbound_ms = tracing::field::Empty,
            trace_id = tracing::field::Empty,
            otel.name = tracing::field::Empty,
            otel.kind = tracing::field::Empty,
        )
    };
}

/// The span of `request`, with its ids and its `route` label. `generation` and
/// `corpus_generation` are recorded later, once a `/retrieve` request is admitted and its
/// generation fixed.
pub fn request_span(id: &RequestId, request: &Request, route: &'static str) -> tracing::Span {
    if UNTRACED_ROUTES.contains(&route) {
        span_under!(UNTRACED_TARGET, id, request, route)
    } else {
        span_under!(module_path!(), id, request, route)
    }
}
