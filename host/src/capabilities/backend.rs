//! What a capability's backend said about a call — the words every capability that reaches a
//! backend (a model server, a vector database) reports in, so the server asks one question of a
//! call ("did a backend turn work away, or fail it?") whatever capability met it: a load signal
//! (429, 503, no answer in time: the adaptive limit backs off, the client gets 503) or a failure
//! that is no sign of load (401/403, unreachable, another 4xx or 5xx: 502) — and what the call's
//! work with its backends was (requests, time, which backend), for its timings, access line and
//! metrics.

use std::time::Duration;

/// The label of a call whose requests reached more than one backend.
pub const SEVERAL_BACKENDS: &str = "(several)";

/// What one call's backends said (the last word of each kind), and the call's work with them.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Backend {
    /// The last signal that a backend is past its capacity, if any.
    pub signal: Option<UpstreamSignal>,
    /// The last failure that was no load signal, if any.
    pub failure: Option<FailureKind>,
    /// Requests sent to backends.
    pub requests: u32,
    /// Requests refused before they were sent (no grant, a per-call bound).
    pub denied: u32,
    /// Their time, from each request to the end of its response, added up.
    pub elapsed: Duration,
    /// The backend the requests reached, as the operator named it (an outbound grant), or
    /// [`SEVERAL_BACKENDS`]; `None` when none was sent. A label: a set the operator chose.
    pub reached: Option<String>,
}

impl Backend {
    /// Whether a backend said anything.
    pub fn spoke(&self) -> bool {
        self.signal.is_some() || self.failure.is_some()
    }

    /// This, with what `later` said over it and its work added.
    pub fn then(self, later: Self) -> Self {
        let reached = match (self.reached, later.reached) {
            (Some(a), Some(b)) if a != b => Some(SEVERAL_BACKENDS.to_owned()),
            (a, b) => b.or(a),
        };
        Self {
            signal: later.signal.or(self.signal),
            failure: later.failure.or(self.failure),
            requests: self.requests.saturating_add(later.requests),
            denied: self.denied.saturating_add(later.denied),
            elapsed: self.elapsed + later.elapsed,
            reached,
        }
    }
}

/// What the backend said about its load, in one call's outbound requests (the last one that
/// said something).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UpstreamSignal {
    /// What it was.
    pub kind: SignalKind,
    /// How long the upstream asked callers to wait (its `Retry-After`, delta-seconds), if it
    /// said.
    pub retry_after: Option<Duration>,
}

/// The signals a backend gives that it is past its capacity.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SignalKind {
    /// It answered 429.
    RateLimited,
    /// It answered 503.
    Unavailable,
    /// It did not answer within the timeouts.
    Timeout,
}

impl SignalKind {
    /// The name (an error code's and a log field's).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::RateLimited => "upstream_rate_limited",
            Self::Unavailable => "upstream_unavailable",
            Self::Timeout => "upstream_timeout",
        }
    }
}

/// How a backend failed a request in a way that is no sign of load: the typed error a client
/// gets when the call's answer failed with it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FailureKind {
    /// It answered 401 or 403: the credential is wrong or lacks a right.
    AuthFailed,
    /// No connection could be made (refused, no route, a name that does not resolve, an
    /// address the grant does not cover).
    Unreachable,
    /// It answered another 4xx: it refused the request as made (a model it does not serve).
    Rejected,
    /// It answered another 5xx.
    ServerError,
}

impl FailureKind {
    /// The name (an error code's and a log field's).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::AuthFailed => "upstream_auth_failed",
            Self::Unreachable => "upstream_unreachable",
            Self::Rejected => "upstream_rejected",
            Self::ServerError => "upstream_error",
        }
    }

    /// The failure a response with `status` is, if it is one (429 and 503 are load signals).
    pub fn of_status(status: u16) -> Option<Self> {
        match status {
            401 | 403 => Some(Self::AuthFailed),
            429 | 503 => None,
            400..=499 => Some(Self::Rejected),
            500..=599 => Some(Self::ServerError),
            _ => None,
        }
    }
}
