//! A request's place in a trace: the W3C `traceparent` (and `tracestate`) a trusted proxy sent
//! becomes the parent of the request's span — a client that is not trusted starts a trace of its
//! own, as it would name no flow — and the trace's id, for the access line and error bodies.

use std::net::IpAddr;
use std::sync::Arc;

use axum::http::HeaderMap;
use ipnet::IpNet;
use opentelemetry::propagation::Extractor;
use opentelemetry::trace::TraceContextExt;
use tracing_opentelemetry::OpenTelemetrySpanExt;

/// Whose trace context is taken (a server state part, with traces on).
#[derive(Debug, Clone)]
pub struct TraceIntake {
    trusted: Arc<[IpNet]>,
}

impl TraceIntake {
    /// Taking `traceparent` from peers in `trusted` (`--trusted-proxy`).
    pub fn new(trusted: Vec<IpNet>) -> Self {
        Self {
            trusted: trusted.into(),
        }
    }

    /// Makes the trace `headers` carry the parent of `span` (not yet entered), when `peer` is
    /// trusted and the header is well formed; returns the span's trace id (its own trace's
    /// otherwise).
    pub fn adopt(
        &self,
        span: &tracing::Span,
        peer: Option<IpAddr>,
        headers: &HeaderMap,
    ) -> Option<String> {
        let trusted = peer.is_some_and(|peer| {
            let peer = peer.to_canonical();
            self.trusted.iter().any(|net| net.contains(&peer))
        });
        if trusted && headers.contains_key("traceparent") {
            let parent = opentelemetry::global::get_text_map_propagator(|propagator| {
                propagator.extract(&Headers(headers))
            });
            if parent.span().span_context().is_valid() {
                let _ = span.set_parent(parent);
            }
        }
        trace_id(span)
    }
}

/// The trace id of `span` (32 hex digits), if it is in a trace.
pub fn trace_id(span: &tracing::Span) -> Option<String> {
    let context = span.context();
    let span = context.span();
    let span_context = span.span_context();
    span_context
        .is_valid()
        .then(|| span_context.trace_id().to_string())
}

/// The trace id of the span the caller is in (an error body's `trace_id`), if traced.
pub fn current_trace_id() -> Option<String> {
    trace_id(&tracing::Span::current())
}

/// A request's headers, read by the propagator (only one value of a header: a second
/// `traceparent` makes the context invalid, as the W3C spec asks).
struct Headers<'a>(&'a HeaderMap);

impl Extractor for Headers<'_> {
    fn get(&self, key: &str) -> Option<&str> {
        let mut values = self.0.get_all(key).iter();
        let first = values.next()?;
        if values.next().is_some() && key == "traceparent" {
            return None;
        }
        first.to_str().ok()
    }

    fn keys(&self) -> Vec<&str> {
        self.0.keys().map(|k| k.as_str()).collect()
    }
}
