//! What wraps every request, in order: its ids ([`super::request_id`]), its span
//! ([`super::request_span`]; with traces on, its parent from a trusted `traceparent`), the
//! handler, the `x-request-id` of its response, its count ([`super::response_metrics`]) and its
//! access-log line ([`super::access_log`]). Every response
//! leaves here with its `x-request-id`.

use std::net::SocketAddr;

use axum::extract::{ConnectInfo, MatchedPath, Request, State};
use axum::middleware::Next;
use axum::response::Response;
use tracing::Instrument;
use tracing_opentelemetry::OpenTelemetrySpanExt;

use super::access_log::{LoggedAtEnd, log_access, log_gone};
use super::request_id::{REQUEST_ID_HEADER, RequestId};
use super::request_span::request_span;
use super::response_metrics::count_response;
use super::state::AppState;

/// What [`request_scope`] needs: the server's state, and every route's path (the route table's,
/// for the `route` label).
#[derive(Clone)]
pub struct RequestScope {
    /// The server's state.
    pub state: AppState,
    /// Every route's path.
    pub routes: &'static [&'static str],
}

/// Assigns the ids, runs the request inside its span, answers with `x-request-id`, counts the
/// response and logs it.
pub async fn request_scope(
    State(RequestScope { state, routes }): State<RequestScope>,
    mut request: Request,
    next: Next,
) -> Response {
    let id = RequestId::assign(state.next_request_id(), request.headers());
    let route = route_label(routes, request.extensions().get::<MatchedPath>());
    let span = request_span(&id, &request, route);
    if let Some(intake) = &state.traces {
        span.record(
            "otel.name",
            tracing::field::display(format_args!("{} {route}", request.method())),
        );
        span.record("otel.kind", "server");
        span.set_attribute("http.request.method", request.method().to_string());
        span.set_attribute("http.route", route);
        let peer = request
            .extensions()
            .get::<ConnectInfo<SocketAddr>>()
            .map(|c| c.0.ip());
        if let Some(trace_id) = intake.adopt(&span, peer, request.headers()) {
            span.record("trace_id", trace_id.as_str());
        }
    }
    let header = id.header.clone();
    request.extensions_mut().insert(id);
    let started = std::time::Instant::now();
    // A client that leaves before its response is made drops this future: its line says so.
    let mut unanswered = Unanswered {
        span: state.access_log.then(|| span.clone()),
        route,
        started,
    };
    let mut response = next.run(request).instrument(span.clone()).await;
    unanswered.span = None;
    response.headers_mut().insert(REQUEST_ID_HEADER, header);
    if state.traces.is_some() {
        let status = response.status();
        span.set_attribute("http.response.status_code", i64::from(status.as_u16()));
        if status.is_server_error() {
            span.set_status(opentelemetry::trace::Status::error(""));
        }
    }
    count_response(&state.metrics, route, &response);
    if state.access_log && response.extensions().get::<LoggedAtEnd>().is_none() {
        log_access(&span, route, &response, started);
    }
    response
}

/// The route a request matched, as a label: one of the service's routes, else `other` (no label
/// value comes from what a client sent).
fn route_label(routes: &[&'static str], matched: Option<&MatchedPath>) -> &'static str {
    let path = matched.map_or("", MatchedPath::as_str);
    routes
        .iter()
        .find(|r| **r == path)
        .copied()
        .unwrap_or("other")
}

/// A request whose client left before its response was made (the request's future dropped):
/// its access line, status 499 (the client closed the request, as nginx names it), when dropped.
struct Unanswered {
    /// The request's span, when the access log is on.
    span: Option<tracing::Span>,
    route: &'static str,
    started: std::time::Instant,
}

impl Drop for Unanswered {
    fn drop(&mut self) {
        if let Some(span) = &self.span {
            log_gone(span, self.route, self.started);
        }
    }
}
