//! The plugins' outbound HTTP requests, counted as the host reports them: by origin — the grant
//! a request went through, as the operator wrote it, or `(denied)` — so labels stay a set the
//! operator chose, whatever plugins ask for; and the requests in flight per origin, which
//! `/metrics` and `/state` read.

use std::collections::BTreeMap;

use metrics::Label;
use turnstile_host::capabilities::outbound::{OutboundEvent, OutboundObserver};

use super::recorder::Metrics;

/// The outbound capability reports its requests here.
impl OutboundObserver for Metrics {
    /// An outbound request was sent through `origin`.
    fn started(&self, origin: &str) {
        self.in_flight().add(origin);
    }

    /// An outbound request ended (or was refused before it was sent).
    fn ended(&self, event: &OutboundEvent) {
        if event.started {
            self.in_flight().remove(&event.origin);
        }
        let origin = || Label::new("origin", event.origin.clone());
        self.counter(
            "turnstile_outbound_requests_total",
            vec![origin(), Label::new("outcome", event.outcome.as_str())],
        )
        .increment(1);
        if event.started {
            self.histogram("turnstile_outbound_request_seconds", vec![origin()])
                .record(event.elapsed.as_secs_f64());
            for (direction, bytes) in [("out", event.bytes_out), ("in", event.bytes_in)] {
                self.counter(
                    "turnstile_outbound_bytes_total",
                    vec![origin(), Label::new("direction", direction)],
                )
                .increment(bytes);
            }
        }
    }
}

impl Metrics {
    /// Outbound requests in flight now, by origin.
    pub fn outbound_in_flight(&self) -> BTreeMap<String, u64> {
        self.in_flight().now()
    }

    /// The in-flight gauges, set at each scrape (an origin with none in flight reads 0 until
    /// its gauge goes idle).
    pub(super) fn render_outbound(&self) {
        for (origin, n) in self.outbound_in_flight() {
            self.gauge(
                "turnstile_outbound_in_flight",
                vec![Label::new("origin", origin)],
            )
            .set(n as f64);
        }
    }
}
