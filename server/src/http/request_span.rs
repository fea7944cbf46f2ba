//! The `request` span: everything logged while a request is handled, on the async side and on
//! its worker thread, is inside it, and so carries the request's ids and route. With traces on,
//! it is the request's server span too (`otel.*`, `trace_id`: recorded by the request's scope).

use axum::extract::Request;

use super::request_id::RequestId;

/// The span of `request`, with its ids and its `route` label. `generation` and
/// `corpus_generation` are recorded later, once a `/retrieve` request is admitted and its
/// generation fixed.
pub fn request_span(id: &RequestId, request: &Request, route: &'static str) -> tracing::Span {
    tracing::info_span!(
        "request",
        request_id = id.number,
        x_request_id = id.header.to_str().unwrap_or_default(),
        method = %request.method(),
        path = request.uri().path(),
        route,
        generation = tracing::field::Empty,
        corpus_generation = tracing::field::Empty,
        outbound_requests = tracing::field::Empty,
        outbound_ms = tracing::field::Empty,
        trace_id = tracing::field::Empty,
        otel.name = tracing::field::Empty,
        otel.kind = tracing::field::Empty,
    )
}
