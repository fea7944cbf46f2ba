//! The metrics' names, kinds and help texts, and the fixed label values.

/// A metric's kind.
#[derive(Debug, Clone, Copy)]
pub(super) enum Kind {
    Counter,
    Gauge,
    Histogram,
}

/// Every metric: name, kind, help. `docs/METRICS.md` says the same, with the labels.
pub(super) const DESCRIPTIONS: &[(&str, Kind, &str)] = &[
    (
        "turnstile_gate_active",
        Kind::Gauge,
        "Leases out: plugin calls running now",
    ),
    (
        "turnstile_gate_waiting",
        Kind::Gauge,
        "Requests waiting for a lease now",
    ),
    (
        "turnstile_gate_max_active",
        Kind::Gauge,
        "The limit on leases now: --max-active, or the adaptive limit with --max-active auto",
    ),
    (
        "turnstile_gate_max_waiting",
        Kind::Gauge,
        "Configured --max-waiting",
    ),
    (
        "turnstile_gate_requests_total",
        Kind::Counter,
        "Requests that reached the gate, by how they ended: admitted, queue_full (429), wait_timeout (503), cancelled (the caller left while waiting)",
    ),
    (
        "turnstile_gate_client_gone_total",
        Kind::Counter,
        "Leases whose client went away while the plugin call ran on (the slot stayed held)",
    ),
    (
        "turnstile_client_gone_total",
        Kind::Counter,
        "Admitted requests whose client left before its answer was sent in full (while its call ran, or mid-stream), by route",
    ),
    (
        "turnstile_streams_open",
        Kind::Gauge,
        "Streamed answers being sent now (POST /v1/chat/completions with stream)",
    ),
    (
        "turnstile_stream_first_token_seconds",
        Kind::Histogram,
        "From a streamed request's arrival to its answer's first content sent, by route",
    ),
    (
        "turnstile_stream_duration_seconds",
        Kind::Histogram,
        "From a stream's headers to its end, by route",
    ),
    (
        "turnstile_upstream_tokens_total",
        Kind::Counter,
        "Tokens the model behind an origin read (in) and wrote (out), by its own usage count as the plugin passed it on",
    ),
    (
        "turnstile_gate_queue_wait_seconds",
        Kind::Histogram,
        "Time an admitted request waited for its lease",
    ),
    (
        "turnstile_gate_execution_seconds",
        Kind::Histogram,
        "Time a lease was held: the plugin call, from admission to its real end",
    ),
    (
        "turnstile_flow_active",
        Kind::Gauge,
        "Leases held by each flow (with --flow-header; flows by label: named, default, other)",
    ),
    (
        "turnstile_flow_waiting",
        Kind::Gauge,
        "Requests waiting in each flow's lane (with --flow-header)",
    ),
    (
        "turnstile_flow_requests_total",
        Kind::Counter,
        "Requests of each flow by how admission ended (with --flow-header)",
    ),
    (
        "turnstile_http_responses_total",
        Kind::Counter,
        "Responses by route and status class",
    ),
    (
        "turnstile_http_request_rejections_total",
        Kind::Counter,
        "Requests refused at the edge, before the gate, by error code",
    ),
    (
        "turnstile_plugin_instantiate_seconds",
        Kind::Histogram,
        "Time to create a plugin call's store and instance",
    ),
    (
        "turnstile_plugin_calls_total",
        Kind::Counter,
        "Plugin calls by outcome",
    ),
    (
        "turnstile_plugin_generation",
        Kind::Gauge,
        "The serving plugin's generation (1 at start, +1 per swap)",
    ),
    (
        "turnstile_plugin_info",
        Kind::Gauge,
        "The serving plugin (value 1)",
    ),
    (
        "turnstile_plugin_swaps_total",
        Kind::Counter,
        "Hot swaps by result: swapped, or the refusal's code",
    ),
    (
        "turnstile_plugin_swap_duration_seconds",
        Kind::Histogram,
        "Time a hot swap took, from the request to the install or refusal",
    ),
    (
        "turnstile_corpus_generation",
        Kind::Gauge,
        "The serving corpus's generation (1 at start, +1 per corpus swap)",
    ),
    (
        "turnstile_corpus_swaps_total",
        Kind::Counter,
        "Corpus swaps by result: swapped, unchanged, or the refusal's code",
    ),
    (
        "turnstile_corpus_host_calls_total",
        Kind::Counter,
        "Corpus host calls made by plugins, by kind and outcome",
    ),
    (
        "turnstile_corpus_host_call_seconds",
        Kind::Histogram,
        "Time of a corpus host call, by kind",
    ),
    (
        "turnstile_outbound_requests_total",
        Kind::Counter,
        "Plugins' outbound HTTP requests, by origin (the grant it went through, or (denied)) and outcome: ok, client_error, rate_limited (429), unavailable (503), server_error, denied, address_refused, timeout, too_large, error",
    ),
    (
        "turnstile_outbound_request_seconds",
        Kind::Histogram,
        "Time of an outbound request sent, by origin: from the plugin's request to the end of the response body",
    ),
    (
        "turnstile_outbound_bytes_total",
        Kind::Counter,
        "Body bytes of outbound requests, by origin and direction (out: sent, in: received)",
    ),
    (
        "turnstile_outbound_in_flight",
        Kind::Gauge,
        "Outbound requests in flight now, by origin",
    ),
    (
        "turnstile_corpus_sessions_open",
        Kind::Gauge,
        "Corpus sessions open now (the serving plugin's calls)",
    ),
    (
        "turnstile_corpus_queries_total",
        Kind::Counter,
        "Rank and snippet calls, by whether the term index or FTS5 answered",
    ),
    (
        "turnstile_corpus_term_index_bytes",
        Kind::Gauge,
        "Memory held by the corpus's term index",
    ),
    (
        "turnstile_build_info",
        Kind::Gauge,
        "This build of turnstile (value 1)",
    ),
    (
        "process_start_time_seconds",
        Kind::Gauge,
        "Start time of the process since the Unix epoch, in seconds",
    ),
    (
        "process_resident_memory_bytes",
        Kind::Gauge,
        "Resident memory size, in bytes",
    ),
    ("process_open_fds", Kind::Gauge, "Open file descriptors"),
    (
        "turnstile_live_subscribers",
        Kind::Gauge,
        "/events streams (the live page's) open now",
    ),
    (
        "turnstile_live_dropped_total",
        Kind::Counter,
        "/events streams dropped because their reader stopped reading",
    ),
    (
        "turnstile_log_lines_dropped_total",
        Kind::Counter,
        "Log lines dropped because the log sink was slower than the server (the log never blocks serving)",
    ),
    (
        "turnstile_trace_spans_total",
        Kind::Counter,
        "Spans ended with traces on (--otlp-endpoint), by outcome: exported (the collector took them), dropped (the export queue was full: the collector slower than the server, or gone; never waited for), failed (their export failed or timed out)",
    ),
    (
        "turnstile_global_requests_total",
        Kind::Counter,
        "Requests that asked the global limit (Redis), by outcome: granted, queue_full, wait_timeout, unavailable (refused, fail closed), failed_open (admitted on the local gate alone)",
    ),
    (
        "turnstile_global_wait_seconds",
        Kind::Histogram,
        "Time a request waited for its global lease",
    ),
    (
        "turnstile_global_leases_held",
        Kind::Gauge,
        "Global leases this replica holds now",
    ),
    (
        "turnstile_global_renewals_total",
        Kind::Counter,
        "Global lease renewals by the heartbeat, by result: renewed, reasserted (found expired, asserted again)",
    ),
    (
        "turnstile_global_redis_failures_total",
        Kind::Counter,
        "Redis calls of the global limit that failed or timed out (200 ms)",
    ),
    (
        "turnstile_global_graces_total",
        Kind::Counter,
        "Graces this replica opened: it found Redis without the deployment's data (restarted empty, flushed, or first start), on another server (restarted, failed over) or behind what it had seen (older data), and no new global lease was granted for one lease TTL",
    ),
    (
        "turnstile_global_circuit_open",
        Kind::Gauge,
        "1 while the circuit breaker skips Redis after repeated failures",
    ),
];

/// How a plugin call ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, strum::IntoStaticStr)]
#[strum(serialize_all = "snake_case")]
pub enum CallOutcome {
    /// Sources served.
    Ok = 0,
    /// The plugin returned its own error.
    PluginError = 1,
    /// The plugin trapped (or its worker panicked).
    Trap = 2,
    /// The plugin's answer broke the contract.
    Contract = 3,
}

pub(super) const CALL_OUTCOMES: [CallOutcome; 4] = [
    CallOutcome::Ok,
    CallOutcome::PluginError,
    CallOutcome::Trap,
    CallOutcome::Contract,
];

impl CallOutcome {
    /// The label value.
    pub fn as_str(self) -> &'static str {
        self.into()
    }
}
