//! Every request gets an id: a process-unique number (the `request_id` of response bodies and
//! log lines) and the `x-request-id` header of its response — the client's own, when it sent a
//! well-formed one, else the number. Everything logged while the request is handled, on the
//! async side and on its worker thread, is inside a `request` span carrying both.

use axum::extract::{MatchedPath, Request, State};
use axum::http::HeaderValue;
use axum::middleware::Next;
use axum::response::Response;
use tracing::Instrument;

use super::error::Rejected;
use super::state::AppState;

/// The header that carries a request's id, in and out.
pub const REQUEST_ID_HEADER: &str = "x-request-id";
/// Longest `x-request-id` kept from a client, in bytes.
pub const MAX_REQUEST_ID_BYTES: usize = 128;

/// A request's ids (a request extension).
#[derive(Debug, Clone)]
pub struct RequestId {
    /// Process-unique, increasing.
    pub number: u64,
    /// The `x-request-id` of the response.
    pub header: HeaderValue,
}

/// A client's id is kept when it is 1..=128 characters of `A-Z a-z 0-9 - _ . : /`: nothing that
/// could break a log line or a header.
fn well_formed(value: &HeaderValue) -> bool {
    let bytes = value.as_bytes();
    !bytes.is_empty()
        && bytes.len() <= MAX_REQUEST_ID_BYTES
        && bytes
            .iter()
            .all(|b| b.is_ascii_alphanumeric() || b"-_.:/".contains(b))
}

/// What [`request_scope`] needs: the server's state, and every route's path (the route table's,
/// for the metric label).
#[derive(Clone)]
pub struct RequestScope {
    /// The server's state.
    pub state: AppState,
    /// Every route's path.
    pub routes: &'static [&'static str],
}

/// Assigns the ids, runs the request inside its span, and answers with `x-request-id`.
pub async fn request_scope(
    State(RequestScope { state, routes }): State<RequestScope>,
    mut request: Request,
    next: Next,
) -> Response {
    let number = state.next_request_id();
    let header = request
        .headers()
        .get(REQUEST_ID_HEADER)
        .filter(|v| well_formed(v))
        .cloned()
        .unwrap_or_else(|| HeaderValue::from(number));
    let route = route_of(routes, request.extensions().get::<MatchedPath>());
    // Every line logged inside the request carries these; `generation` and `corpus_generation`
    // are recorded once a `/retrieve` request is admitted and its generation fixed.
    let span = tracing::info_span!(
        "request",
        request_id = number,
        x_request_id = header.to_str().unwrap_or_default(),
        method = %request.method(),
        path = request.uri().path(),
        route,
        generation = tracing::field::Empty,
        corpus_generation = tracing::field::Empty,
    );
    request.extensions_mut().insert(RequestId {
        number,
        header: header.clone(),
    });
    let started = std::time::Instant::now();
    let mut response = next.run(request).instrument(span.clone()).await;
    response.headers_mut().insert(REQUEST_ID_HEADER, header);
    let status = response.status().as_u16();
    state.metrics.response(route, status);
    let rejected = response.extensions().get::<Rejected>().map(|r| r.0);
    if let Some(code) = rejected {
        state.metrics.rejection(code);
    }
    if state.access_log {
        let served = response.extensions().get::<Served>();
        span.in_scope(|| {
            tracing::info!(
                target: "turnstile::access",
                route,
                status,
                error = rejected,
                generation = served.map(|s| s.generation),
                corpus_generation = served.map(|s| s.corpus_generation),
                queue_ms = served.map(|s| s.queue_ms),
                execution_ms = served.map(|s| s.execution_ms),
                total_ms = started.elapsed().as_secs_f64() * 1e3,
                "request completed"
            );
        });
    }
    response
}

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
}

/// The route a request matched, as a metric label: one of the service's routes, else `other`
/// (no label value comes from what a client sent).
fn route_of(routes: &[&'static str], matched: Option<&MatchedPath>) -> &'static str {
    let path = matched.map_or("", MatchedPath::as_str);
    routes
        .iter()
        .find(|r| **r == path)
        .copied()
        .unwrap_or("other")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_plain_ids_are_kept() {
        for ok in ["abc-123", "9f86d081:trace/7", &"a".repeat(128)] {
            assert!(well_formed(&HeaderValue::from_str(ok).unwrap()), "{ok}");
        }
        for bad in ["", "has space", "semi;colon", "quote\"", &"a".repeat(129)] {
            assert!(!well_formed(&HeaderValue::from_str(bad).unwrap()), "{bad}");
        }
    }
}
