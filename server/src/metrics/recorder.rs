//! The server's recorder: every metric described and its fixed series created at start, the
//! counts and histograms of what happens, and the gauges of what is, read at each scrape.

use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};
use turnstile_global::GlobalGate;

use metrics::{Counter, Gauge, Histogram, Key, KeyName, Label, Metadata, Recorder};
use metrics_exporter_prometheus::{PrometheusBuilder, PrometheusHandle, PrometheusRecorder};
use metrics_util::MetricKindMask;

use turnstile_gate::Gate;
use turnstile_host::swap::{CorpusSwapError, SwapError, SwapObserver, SwapOutcome};
use turnstile_host::{HostCallKind, HostCallOutcome, Observer, PluginSlot};

use super::names::{CALL_OUTCOMES, CallOutcome, DESCRIPTIONS, Kind};

/// Upper bounds of every duration histogram, in seconds: 1 ms doubling to 65.5 s.
pub fn duration_buckets() -> Vec<f64> {
    (0..17).map(|i| 0.001 * f64::from(1u32 << i)).collect()
}

/// The live view's counts, as `/metrics` shows them.
#[derive(Debug, Clone, Copy, Default)]
pub struct LiveCounts {
    /// `/events` streams open now.
    pub subscribers: usize,
    /// Streams dropped because their reader stopped reading, over the server's life.
    pub dropped: u64,
}

/// How often observations recorded into histograms are folded into their buckets (also at every
/// scrape): until then they wait in a queue, so this bounds the queue to what this long records.
pub const UPKEEP_INTERVAL: Duration = Duration::from_secs(5);

/// How long a gauge may go without being set before it is dropped (they are set at each scrape).
const GAUGE_IDLE: Duration = Duration::from_secs(1);

/// Every metric of one server.
#[derive(Debug)]
pub struct Metrics {
    recorder: PrometheusRecorder,
    handle: PrometheusHandle,
    started: f64,
    queue_wait: Histogram,
    global_wait: Histogram,
    execution: Histogram,
    instantiate: Histogram,
    swap_duration: Histogram,
    calls: [Counter; 4],
    host: Arc<HostCallMetrics>,
    outbound: super::in_flight::InFlight,
    streams: super::open_streams::OpenStreams,
}

/// The plugin host calls' metrics (shared with every plugin instance's store).
#[derive(Debug)]
pub struct HostCallMetrics {
    calls: Vec<Counter>,
    time: Vec<Histogram>,
}

impl HostCallMetrics {
    /// One corpus host call of `kind` that took `elapsed` and ended in `outcome`.
    pub fn observe(&self, kind: HostCallKind, outcome: HostCallOutcome, elapsed: Duration) {
        let (k, o) = (kind as usize, outcome as usize);
        self.calls[k * HostCallOutcome::ALL.len() + o].increment(1);
        self.time[k].record(elapsed.as_secs_f64());
    }
}

const META: Metadata<'static> = Metadata::new("turnstile", metrics::Level::INFO, None);

impl Metrics {
    /// A recorder with every metric described and the fixed series created (at zero).
    pub fn new() -> Self {
        let recorder = PrometheusBuilder::new()
            .set_buckets(&duration_buckets())
            .unwrap_or_else(|_| unreachable!("the bucket list is not empty"))
            // Gauges are all set at each scrape: one not set for a second is stale.
            .idle_timeout(MetricKindMask::GAUGE, Some(GAUGE_IDLE))
            .build_recorder();
        for (name, kind, help) in DESCRIPTIONS {
            let (name, help) = (KeyName::from(*name), (*help).into());
            match kind {
                Kind::Counter => recorder.describe_counter(name, None, help),
                Kind::Gauge => recorder.describe_gauge(name, None, help),
                Kind::Histogram => recorder.describe_histogram(name, None, help),
            }
        }
        let counter = |name: &'static str, labels: Vec<Label>| {
            recorder.register_counter(&Key::from_parts(name, labels), &META)
        };
        let histogram = |name: &'static str, labels: Vec<Label>| {
            recorder.register_histogram(&Key::from_parts(name, labels), &META)
        };
        let calls = CALL_OUTCOMES.map(|o| {
            counter(
                "turnstile_plugin_calls_total",
                vec![Label::new("outcome", o.as_str())],
            )
        });
        let mut host_calls = Vec::new();
        let mut host_time = Vec::new();
        for kind in HostCallKind::ALL {
            for outcome in HostCallOutcome::ALL {
                host_calls.push(counter(
                    "turnstile_corpus_host_calls_total",
                    vec![
                        Label::new("kind", kind.as_str()),
                        Label::new("outcome", outcome.as_str()),
                    ],
                ));
            }
            host_time.push(histogram(
                "turnstile_corpus_host_call_seconds",
                vec![Label::new("kind", kind.as_str())],
            ));
        }
        Self {
            queue_wait: histogram("turnstile_gate_queue_wait_seconds", vec![]),
            execution: histogram("turnstile_gate_execution_seconds", vec![]),
            instantiate: histogram("turnstile_plugin_instantiate_seconds", vec![]),
            swap_duration: histogram("turnstile_plugin_swap_duration_seconds", vec![]),
            global_wait: histogram("turnstile_global_wait_seconds", vec![]),
            calls,
            host: Arc::new(HostCallMetrics {
                calls: host_calls,
                time: host_time,
            }),
            handle: recorder.handle(),
            outbound: Default::default(),
            streams: Default::default(),
            recorder,
            started: SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .map_or(0.0, |d| d.as_secs_f64()),
        }
    }

    pub(super) fn counter(&self, name: &'static str, labels: Vec<Label>) -> Counter {
        self.recorder
            .register_counter(&Key::from_parts(name, labels), &META)
    }

    pub(super) fn gauge(&self, name: &'static str, labels: Vec<Label>) -> Gauge {
        self.recorder
            .register_gauge(&Key::from_parts(name, labels), &META)
    }

    pub(super) fn histogram(&self, name: &'static str, labels: Vec<Label>) -> Histogram {
        self.recorder
            .register_histogram(&Key::from_parts(name, labels), &META)
    }

    pub(super) fn in_flight(&self) -> &super::in_flight::InFlight {
        &self.outbound
    }

    pub(super) fn streams(&self) -> &super::open_streams::OpenStreams {
        &self.streams
    }

    /// The text of every metric now, with the server's state read at this instant.
    pub fn render(
        &self,
        gate: &Gate,
        flows: Option<&std::collections::BTreeSet<String>>,
        plugins: &PluginSlot,
        global: Option<&GlobalGate>,
        live: LiveCounts,
    ) -> String {
        if let Some(global) = global {
            self.render_global(global);
        }
        self.render_outbound();
        self.render_streams();
        self.gauge("turnstile_live_subscribers", vec![])
            .set(live.subscribers as f64);
        self.counter("turnstile_live_dropped_total", vec![])
            .absolute(live.dropped);
        self.counter("turnstile_log_lines_dropped_total", vec![])
            .absolute(crate::logging::dropped_lines());
        let spans = crate::traces::export_counts();
        for (outcome, value) in [
            ("exported", spans.exported),
            ("dropped", spans.dropped),
            ("failed", spans.failed),
        ] {
            self.counter(
                "turnstile_trace_spans_total",
                vec![Label::new("outcome", outcome)],
            )
            .absolute(value);
        }
        let snapshot = gate.snapshot();
        if let Some(named) = flows {
            self.render_flows(named, &snapshot.flows);
        }
        self.gauge("turnstile_gate_active", vec![])
            .set(snapshot.active as f64);
        self.gauge("turnstile_gate_waiting", vec![])
            .set(snapshot.waiting as f64);
        self.gauge("turnstile_gate_max_active", vec![])
            .set(snapshot.max_active as f64);
        self.gauge("turnstile_gate_max_waiting", vec![])
            .set(snapshot.max_waiting as f64);
        let t = snapshot.totals;
        for (outcome, value) in [
            ("admitted", t.admitted),
            ("queue_full", t.queue_full),
            ("wait_timeout", t.wait_timeout),
            ("cancelled", t.cancelled),
        ] {
            self.counter(
                "turnstile_gate_requests_total",
                vec![Label::new("outcome", outcome)],
            )
            .absolute(value);
        }
        self.counter("turnstile_gate_client_gone_total", vec![])
            .absolute(t.client_gone);
        let generation = plugins.current();
        self.gauge("turnstile_plugin_generation", vec![])
            .set(generation.number as f64);
        // One series: the serving plugin's (the info of a replaced one would linger otherwise).
        let plugin_info = Key::from_parts(
            "turnstile_plugin_info",
            vec![
                Label::new("name", generation.plugin.name().to_owned()),
                Label::new("sha256", generation.plugin.sha256().to_owned()),
                Label::new("generation", generation.number.to_string()),
            ],
        );
        self.recorder.register_gauge(&plugin_info, &META).set(1.0);
        self.gauge("turnstile_corpus_generation", vec![])
            .set(generation.corpus.number as f64);
        let corpus = generation.plugin.corpus();
        self.gauge("turnstile_corpus_sessions_open", vec![])
            .set(corpus.live_sessions() as f64);
        let ((search_index, search_fts5), (rank_index, rank_fts5), (snippet_index, snippet_fts5)) = (
            corpus.search_paths(),
            corpus.rank_paths(),
            corpus.snippet_paths(),
        );
        for (call, path, value) in [
            ("search", "term_index", search_index),
            ("search", "fts5", search_fts5),
            ("rank", "term_index", rank_index),
            ("rank", "fts5", rank_fts5),
            ("snippet", "term_index", snippet_index),
            ("snippet", "fts5", snippet_fts5),
        ] {
            self.counter(
                "turnstile_corpus_queries_total",
                vec![Label::new("call", call), Label::new("path", path)],
            )
            .absolute(value);
        }
        self.gauge("turnstile_corpus_term_index_bytes", vec![])
            .set(corpus.term_index_bytes() as f64);
        self.gauge(
            "turnstile_build_info",
            vec![
                Label::new("version", env!("CARGO_PKG_VERSION")),
                Label::new("git_commit", env!("TURNSTILE_GIT_COMMIT")),
                Label::new("wasmtime_version", env!("TURNSTILE_WASMTIME_VERSION")),
            ],
        )
        .set(1.0);
        self.gauge("process_start_time_seconds", vec![])
            .set(self.started);
        if let Some(resident) = resident_bytes() {
            self.gauge("process_resident_memory_bytes", vec![])
                .set(resident as f64);
        }
        if let Some(fds) = open_fds() {
            self.gauge("process_open_fds", vec![]).set(fds as f64);
        }
        // Every gauge was just set; one not set now (a swapped-out plugin's info) is idle and
        // goes, so only the serving plugin is described.
        self.handle.run_upkeep();
        self.handle.render()
    }

    /// The global limit's counts (this replica's, no Redis call).
    fn render_global(&self, global: &GlobalGate) {
        let t = global.totals();
        for (outcome, value) in [
            ("granted", t.granted),
            ("queue_full", t.queue_full),
            ("wait_timeout", t.wait_timeout),
            ("unavailable", t.unavailable),
            ("failed_open", t.failed_open),
        ] {
            self.counter(
                "turnstile_global_requests_total",
                vec![Label::new("outcome", outcome)],
            )
            .absolute(value);
        }
        for (result, value) in [("renewed", t.renewals), ("reasserted", t.reasserted)] {
            self.counter(
                "turnstile_global_renewals_total",
                vec![Label::new("result", result)],
            )
            .absolute(value);
        }
        self.counter("turnstile_global_redis_failures_total", vec![])
            .absolute(t.failures);
        self.counter("turnstile_global_graces_total", vec![])
            .absolute(t.graces);
        self.gauge("turnstile_global_leases_held", vec![])
            .set(global.leases_held() as f64);
        self.gauge("turnstile_global_circuit_open", vec![])
            .set(if global.circuit_open() { 1.0 } else { 0.0 });
    }

    /// A request's wait for its global lease.
    pub fn global_waited(&self, waited: Duration) {
        self.global_wait.record(waited.as_secs_f64());
    }

    /// Folds recorded observations into their histograms; run every [`UPKEEP_INTERVAL`].
    pub fn upkeep(&self) {
        self.handle.run_upkeep();
    }

    /// An admitted request's wait for its lease, and then how long its lease was held.
    pub fn admitted(&self, waited: Duration, held: Duration) {
        self.queue_wait.record(waited.as_secs_f64());
        self.execution.record(held.as_secs_f64());
    }

    /// A response on `route` (a route template or `other`) with `status`.
    pub fn response(&self, route: &'static str, status: u16) {
        let class = match status {
            100..=199 => "1xx",
            200..=299 => "2xx",
            300..=399 => "3xx",
            400..=499 => "4xx",
            _ => "5xx",
        };
        self.counter(
            "turnstile_http_responses_total",
            vec![Label::new("route", route), Label::new("class", class)],
        )
        .increment(1);
    }

    /// A request refused at the edge with `code`.
    pub fn rejection(&self, code: &'static str) {
        self.counter(
            "turnstile_http_request_rejections_total",
            vec![Label::new("code", code)],
        )
        .increment(1);
    }

    /// A plugin call's outcome and its instantiation time.
    pub fn call(&self, outcome: CallOutcome, instantiate: Duration) {
        self.calls[outcome as usize].increment(1);
        self.instantiate.record(instantiate.as_secs_f64());
    }

    /// A plugin swap's result (`swapped`, `unchanged`, or the refusal's code) and duration.
    pub fn swap(&self, result: &'static str, elapsed: Duration) {
        self.counter(
            "turnstile_plugin_swaps_total",
            vec![Label::new("result", result)],
        )
        .increment(1);
        self.swap_duration.record(elapsed.as_secs_f64());
    }

    /// A `/retrieve` request of the flow labelled `flow` (see `Admission::flow_label`) left
    /// admission: `admitted`, `queue_full`, `wait_timeout` or `global_refused`.
    pub fn flow_request(&self, flow: &str, outcome: &'static str) {
        self.counter(
            "turnstile_flow_requests_total",
            vec![
                Label::new("flow", flow.to_owned()),
                Label::new("outcome", outcome),
            ],
        )
        .increment(1);
    }

    /// Each flow label's leases and waiters now (every label of the settings, 0 when idle).
    fn render_flows(
        &self,
        named: &std::collections::BTreeSet<String>,
        live: &[turnstile_gate::FlowSnapshot],
    ) {
        let mut by_label: std::collections::BTreeMap<&str, (usize, usize)> = named
            .iter()
            .map(|n| (n.as_str(), (0, 0)))
            .chain([(turnstile_gate::DEFAULT_FLOW, (0, 0)), ("other", (0, 0))])
            .collect();
        for flow in live {
            let label = crate::admission::flow_label(named, Some(flow.name.as_str()));
            let sums = by_label.entry(label).or_default();
            sums.0 += flow.active;
            sums.1 += flow.waiting;
        }
        for (label, (active, waiting)) in by_label {
            let flow = || vec![Label::new("flow", label.to_owned())];
            self.gauge("turnstile_flow_active", flow())
                .set(active as f64);
            self.gauge("turnstile_flow_waiting", flow())
                .set(waiting as f64);
        }
    }

    /// A corpus swap's result (`swapped`, `unchanged`, or the refusal's code).
    pub fn corpus_swap(&self, result: &'static str) {
        self.counter(
            "turnstile_corpus_swaps_total",
            vec![Label::new("result", result)],
        )
        .increment(1);
    }

    /// The host calls' metrics, for plugin instances.
    pub fn host_calls(&self) -> Arc<HostCallMetrics> {
        Arc::clone(&self.host)
    }
}

/// The plugin host reports its host calls here.
impl Observer for Metrics {
    fn host_call(&self, kind: HostCallKind, outcome: HostCallOutcome, elapsed: Duration) {
        self.host.observe(kind, outcome, elapsed);
    }
}

/// The swaps report each attempt here, labelled with the server's codes.
impl SwapObserver for Metrics {
    fn plugin_swap(&self, outcome: Result<SwapOutcome, &SwapError>, elapsed: Duration) {
        self.swap(crate::swap_codes::plugin_swap_result(outcome), elapsed);
    }

    fn corpus_swap(&self, outcome: Result<SwapOutcome, &CorpusSwapError>, _elapsed: Duration) {
        Metrics::corpus_swap(self, crate::swap_codes::corpus_swap_result(outcome));
    }
}

impl Default for Metrics {
    fn default() -> Self {
        Self::new()
    }
}

/// Resident memory from `/proc/self/statm` (Linux).
fn resident_bytes() -> Option<u64> {
    let statm = std::fs::read_to_string("/proc/self/statm").ok()?;
    let pages: u64 = statm.split_whitespace().nth(1)?.parse().ok()?;
    Some(pages * rustix::param::page_size() as u64)
}

/// Entries of `/proc/self/fd` (Linux).
fn open_fds() -> Option<usize> {
    Some(std::fs::read_dir("/proc/self/fd").ok()?.count())
}
