//! What the outbound capability tells whoever counts its requests (the server's metrics): each
//! request sent, and how each ended. Wired once, in the capability's options
//! ([`super::OutboundOptions::observer`]); the host knows no metrics library.

use std::sync::Arc;
use std::time::Duration;

/// Receives what outbound requests do. Both methods have defaults that ignore it.
pub trait OutboundObserver: Send + Sync {
    /// An outbound request to the granted origin `origin` (its grant, as the operator wrote it)
    /// was sent: one more in flight there until its [`OutboundObserver::ended`] comes.
    fn started(&self, origin: &str) {
        let _ = origin;
    }

    /// An outbound request ended (answered and its body read, failed, or refused before it was
    /// sent — then it never started).
    fn ended(&self, event: &OutboundEvent) {
        let _ = event;
    }
}

/// Who is told of outbound requests (none: nobody), as the options hold it.
#[derive(Clone, Default)]
pub struct Observed(pub Option<Arc<dyn OutboundObserver>>);

impl std::fmt::Debug for Observed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(if self.0.is_some() {
            "Observed(Some)"
        } else {
            "Observed(None)"
        })
    }
}

/// The same observer (or none on both sides).
impl PartialEq for Observed {
    fn eq(&self, other: &Self) -> bool {
        match (&self.0, &other.0) {
            (Some(a), Some(b)) => Arc::ptr_eq(a, b),
            (None, None) => true,
            _ => false,
        }
    }
}

impl Eq for Observed {}

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
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, strum::IntoStaticStr)]
#[strum(serialize_all = "snake_case")]
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
        self.into()
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
