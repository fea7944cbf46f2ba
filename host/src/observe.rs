//! What the plugin host reports of its calls, for whoever counts it (the server's metrics): each
//! host call a plugin makes and each outbound HTTP request (the capabilities report through it;
//! swaps have their own `swap::SwapObserver`). The host knows no metrics library; it calls an
//! [`Observer`].

use std::time::Duration;

/// The `tracing` target of what only traces show (spans and events the log never prints): the
/// server's trace layer takes it, its log filters it out.
pub const TRACE_TARGET: &str = "turnstile::trace";

/// One host call, as an event of the plugin call's span (bounded by the span's event limit,
/// `OTEL_SPAN_EVENT_COUNT_LIMIT`; the dropped ones are counted in the span): nothing unless
/// traces are on.
pub(crate) fn trace_host_call(kind: HostCallKind, outcome: HostCallOutcome, elapsed: Duration) {
    tracing::info!(
        target: TRACE_TARGET,
        host_call = kind.as_str(),
        outcome = outcome.as_str(),
        elapsed_ms = elapsed.as_secs_f64() * 1e3,
        "host_call"
    );
}

/// Receives what the plugin host does. Every method has a default that ignores it.
pub trait Observer: Send + Sync {
    /// One host call of `kind` that took `elapsed` and ended in `outcome`.
    fn host_call(&self, kind: HostCallKind, outcome: HostCallOutcome, elapsed: Duration) {
        let _ = (kind, outcome, elapsed);
    }

    /// An outbound request to the granted origin `origin` (its grant, as the operator wrote it)
    /// was sent: one more in flight there until its [`Observer::outbound`] comes.
    fn outbound_started(&self, origin: &str) {
        let _ = origin;
    }

    /// An outbound request ended (answered and its body read, failed, or refused before it was
    /// sent — then it never started).
    fn outbound(&self, event: &OutboundEvent) {
        let _ = event;
    }
}

/// One outbound request, as the metrics count it.
#[derive(Debug, Clone)]
pub struct OutboundEvent {
    /// The grant it went through, as the operator wrote it (`https://*.example.com`), or
    /// `(denied)` for a request no grant covers: a bounded label whatever the plugin asks.
    pub origin: String,
    /// How it ended.
    pub outcome: OutboundOutcome,
    /// Whether it was sent (and so counted by [`Observer::outbound_started`]).
    pub started: bool,
    /// From the plugin's request to the end of the response body (or the failure).
    pub elapsed: Duration,
    /// Request body bytes sent.
    pub bytes_out: u64,
    /// Response body bytes received.
    pub bytes_in: u64,
}

/// How an outbound request ended: a bounded set (a metric label).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum OutboundOutcome {
    /// A response with a status below 400, its body read to the end (or dropped by the plugin).
    Ok,
    /// A 4xx response other than 429.
    ClientError,
    /// 429: the upstream is rate limiting.
    RateLimited,
    /// 503: the upstream is unavailable.
    Unavailable,
    /// Another 5xx response.
    ServerError,
    /// No grant covers the origin, or a per-call bound was reached: never sent.
    Denied,
    /// The name resolved only to addresses the grant does not cover (loopback, private,
    /// link-local — the cloud metadata address among them): never sent.
    AddressRefused,
    /// A connect, first-byte or between-bytes timeout.
    Timeout,
    /// A request or response body over its cap.
    TooLarge,
    /// Anything else: the connection was refused or broke, TLS failed, the response was not
    /// HTTP.
    Error,
    /// Cancelled by the host because the call's client went away (its connection closed).
    Cancelled,
}

impl OutboundOutcome {
    /// Every outcome.
    pub const ALL: [Self; 11] = [
        Self::Ok,
        Self::ClientError,
        Self::RateLimited,
        Self::Unavailable,
        Self::ServerError,
        Self::Denied,
        Self::AddressRefused,
        Self::Timeout,
        Self::TooLarge,
        Self::Error,
        Self::Cancelled,
    ];

    /// The name (a metric label value).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Ok => "ok",
            Self::ClientError => "client_error",
            Self::RateLimited => "rate_limited",
            Self::Unavailable => "unavailable",
            Self::ServerError => "server_error",
            Self::Denied => "denied",
            Self::AddressRefused => "address_refused",
            Self::Timeout => "timeout",
            Self::TooLarge => "too_large",
            Self::Error => "error",
            Self::Cancelled => "cancelled",
        }
    }

    /// The outcome of a response with `status`.
    pub fn of_status(status: u16) -> Self {
        match status {
            429 => Self::RateLimited,
            503 => Self::Unavailable,
            500..=599 => Self::ServerError,
            400..=499 => Self::ClientError,
            _ => Self::Ok,
        }
    }
}

/// The host calls a plugin can make that are counted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum HostCallKind {
    /// `session.open`.
    Open = 0,
    /// `session.search`.
    Search = 1,
    /// `session.rank`.
    Rank = 2,
    /// `session.snippet`.
    Snippet = 3,
    /// `session.get`.
    Get = 4,
    /// `session.count`.
    Count = 5,
    /// `session.nearest`.
    Nearest = 6,
    /// `embeddings.embed`.
    Embed = 7,
}

/// How a host call ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum HostCallOutcome {
    /// Answered.
    Ok = 0,
    /// Refused or failed with a typed error (bad expression, a bound, the session limit).
    Error = 1,
    /// Stopped by its time budget.
    Timeout = 2,
}

impl HostCallKind {
    /// Every kind, in the order of their values.
    pub const ALL: [Self; 8] = [
        Self::Open,
        Self::Search,
        Self::Rank,
        Self::Snippet,
        Self::Get,
        Self::Count,
        Self::Nearest,
        Self::Embed,
    ];

    /// The name (a metric label value).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Open => "open",
            Self::Search => "search",
            Self::Rank => "rank",
            Self::Snippet => "snippet",
            Self::Get => "get",
            Self::Count => "count",
            Self::Nearest => "nearest",
            Self::Embed => "embed",
        }
    }
}

impl HostCallOutcome {
    /// Every outcome, in the order of their values.
    pub const ALL: [Self; 3] = [Self::Ok, Self::Error, Self::Timeout];

    /// The name (a metric label value).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Ok => "ok",
            Self::Error => "error",
            Self::Timeout => "timeout",
        }
    }
}
