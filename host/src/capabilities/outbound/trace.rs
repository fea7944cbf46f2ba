//! Each sent request's span (`outbound`, a client span, child of the plugin call's) and the
//! trace context it carries to the upstream: W3C `traceparent`/`tracestate`, set by the host
//! over whatever the plugin wrote, so the model server's own spans join the request's trace.
//! With traces off, the span is disabled and nothing is set.

use http::{HeaderMap, HeaderName, HeaderValue, Method};
use opentelemetry::propagation::Injector;
use tracing_opentelemetry::OpenTelemetrySpanExt;

use super::observe::OutboundOutcome;
use crate::observe::TRACE_TARGET;

/// The span of a request to `host:port` through the grant `grant`.
pub(super) fn request_span(method: &Method, host: &str, port: u16, grant: &str) -> tracing::Span {
    tracing::info_span!(
        target: TRACE_TARGET,
        "outbound",
        otel.name = %method,
        otel.kind = "client",
        otel.status_code = tracing::field::Empty,
        http.request.method = %method,
        server.address = host,
        server.port = i64::from(port),
        turnstile.grant = grant,
        http.response.status_code = tracing::field::Empty,
        turnstile.outcome = tracing::field::Empty,
    )
}

/// Sets the trace context of `span` on a request's `headers` (nothing when traces are off).
pub(super) fn carry(span: &tracing::Span, headers: &mut HeaderMap) {
    if span.is_disabled() {
        return;
    }
    let context = span.context();
    opentelemetry::global::get_text_map_propagator(|propagator| {
        propagator.inject_context(&context, &mut Headers(headers));
    });
}

/// How the request ended, on its span.
pub(super) fn record_outcome(span: &tracing::Span, outcome: OutboundOutcome) {
    span.record("turnstile.outcome", outcome.as_str());
    if outcome != OutboundOutcome::Ok {
        span.record("otel.status_code", "error");
    }
}

/// A request's headers, written by the propagator.
struct Headers<'a>(&'a mut HeaderMap);

impl Injector for Headers<'_> {
    fn set(&mut self, key: &str, value: String) {
        if let (Ok(name), Ok(value)) = (
            HeaderName::from_bytes(key.as_bytes()),
            HeaderValue::from_str(&value),
        ) {
            self.0.insert(name, value);
        }
    }
}
