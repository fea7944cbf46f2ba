//! The host's bounds on every outbound request of a runtime, whatever a guest asks: timeouts (a
//! guest may ask for shorter ones, never longer), body caps, requests per call, requests in
//! flight per origin. Each answers a threat: an upstream that never answers or trickles, one
//! that sends an endless body, a plugin that loops over requests or floods one origin.

use std::time::Duration;

/// Bounds on outbound requests.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OutboundOptions {
    /// To establish a connection (TCP, and TLS for `https`).
    pub connect_timeout: Duration,
    /// From the request's sending to the response's headers (`--outbound-timeout-ms`).
    pub first_byte_timeout: Duration,
    /// Between two frames of a response body.
    pub between_bytes_timeout: Duration,
    /// From the request's sending to the end of its response body, whatever the pace: an
    /// upstream trickling a byte just under the between-bytes timeout is stopped here.
    pub total_timeout: Duration,
    /// All of one call's requests, from the call's start: no request runs past it, whatever
    /// its own bounds (16 requests of two minutes each would hold a lease for half an hour).
    pub call_timeout: Duration,
    /// Largest request body, in bytes.
    pub max_request_bytes: u64,
    /// Largest response body, in bytes.
    pub max_response_bytes: u64,
    /// Requests one call may ask for (sent or refused).
    pub max_requests_per_call: u32,
    /// Requests in flight to one origin at once (so, connections to it), across the calls of
    /// one plugin; a request past it waits up to its connect timeout.
    pub max_connections_per_origin: usize,
    /// The requests in flight to each origin, shared by every plugin of the runtime (a swap
    /// does not give an origin a second cap).
    pub slots: super::slots::OriginSlots,
    /// CA certificates trusted beyond the compiled-in roots (`--outbound-ca-file`).
    pub trusted_roots: super::trust::TrustedRoots,
    /// Deny every request, whatever the grants (conformance work: `check` and a swap's smoke
    /// checks send nothing to a backend; the grants are listed, and a denial is proven).
    pub deny_all: bool,
    /// Told of every request (the server's metrics), when measured.
    pub observer: super::observe::Observed,
}

impl OutboundOptions {
    /// The same bounds for conformance work: every request denied, and none counted.
    pub fn for_conformance(mut self) -> Self {
        self.deny_all = true;
        self.observer = Default::default();
        self
    }
}

/// Default connect timeout: 5 s.
pub const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(5);
/// Default first-byte timeout: 30 s (a model's answer can take that long).
pub const DEFAULT_FIRST_BYTE_TIMEOUT: Duration = Duration::from_secs(30);
/// Default between-bytes timeout: 10 s.
pub const DEFAULT_BETWEEN_BYTES_TIMEOUT: Duration = Duration::from_secs(10);
/// Default whole-request timeout: 120 s.
pub const DEFAULT_TOTAL_TIMEOUT: Duration = Duration::from_secs(120);
/// Default budget of one call's requests together: 300 s.
pub const DEFAULT_CALL_TIMEOUT: Duration = Duration::from_secs(300);
/// Default request body cap: 1 MiB.
pub const DEFAULT_MAX_REQUEST_BYTES: u64 = 1 << 20;
/// Default response body cap: 4 MiB.
pub const DEFAULT_MAX_RESPONSE_BYTES: u64 = 4 << 20;
/// Default requests per call: 16.
pub const DEFAULT_MAX_REQUESTS_PER_CALL: u32 = 16;
/// Default requests in flight per origin: 64.
pub const DEFAULT_MAX_CONNECTIONS_PER_ORIGIN: usize = 64;

impl Default for OutboundOptions {
    fn default() -> Self {
        Self {
            connect_timeout: DEFAULT_CONNECT_TIMEOUT,
            first_byte_timeout: DEFAULT_FIRST_BYTE_TIMEOUT,
            between_bytes_timeout: DEFAULT_BETWEEN_BYTES_TIMEOUT,
            total_timeout: DEFAULT_TOTAL_TIMEOUT,
            call_timeout: DEFAULT_CALL_TIMEOUT,
            max_request_bytes: DEFAULT_MAX_REQUEST_BYTES,
            max_response_bytes: DEFAULT_MAX_RESPONSE_BYTES,
            max_requests_per_call: DEFAULT_MAX_REQUESTS_PER_CALL,
            max_connections_per_origin: DEFAULT_MAX_CONNECTIONS_PER_ORIGIN,
            slots: Default::default(),
            trusted_roots: Default::default(),
            deny_all: false,
            observer: Default::default(),
        }
    }
}
