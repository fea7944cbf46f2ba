//! What an operator sees of answers and model calls: streams open now, how long a streamed
//! answer took to its first token and to its end, the model's tokens in and out by origin (its
//! own `usage`, passed on by the plugin), and the clients that left before their answer was
//! sent in full. Labels are routes and granted origins: sets the server and the operator chose.

use std::time::Duration;

use metrics::Label;

use super::open_streams::StreamOpen;
use super::recorder::Metrics;

impl Metrics {
    /// A stream was opened (its response's headers sent): open until the returned guard drops.
    pub fn stream_opened(&self) -> StreamOpen {
        self.streams().open()
    }

    /// Streams open now.
    pub fn streams_open(&self) -> u64 {
        self.streams().now()
    }

    /// A streamed answer's first content reached its client `after` the request arrived.
    pub fn first_token(&self, route: &'static str, after: Duration) {
        self.histogram(
            "turnstile_stream_first_token_seconds",
            vec![Label::new("route", route)],
        )
        .record(after.as_secs_f64());
    }

    /// A stream ended `after` its headers were sent.
    pub fn stream_ended(&self, route: &'static str, after: Duration) {
        self.histogram(
            "turnstile_stream_duration_seconds",
            vec![Label::new("route", route)],
        )
        .record(after.as_secs_f64());
    }

    /// The model behind `origin` (a grant, as the operator wrote it) read `prompt` tokens and
    /// wrote `completion`, as it counted them.
    pub fn tokens(&self, origin: &str, prompt: u64, completion: u64) {
        for (direction, tokens) in [("in", prompt), ("out", completion)] {
            self.counter(
                "turnstile_upstream_tokens_total",
                vec![
                    Label::new("origin", origin.to_owned()),
                    Label::new("direction", direction),
                ],
            )
            .increment(tokens);
        }
    }

    /// An admitted request's client left before its answer was sent in full.
    pub fn client_gone(&self, route: &'static str) {
        self.counter(
            "turnstile_client_gone_total",
            vec![Label::new("route", route)],
        )
        .increment(1);
    }

    /// The open-streams gauge, set at each scrape.
    pub(super) fn render_streams(&self) {
        self.gauge("turnstile_streams_open", vec![])
            .set(self.streams_open() as f64);
    }
}
