//! What the plugin host reports of its calls, for whoever counts it (the server's metrics): each
//! host call a plugin makes (a capability with events of its own has its own observer, in its
//! options: outbound's `OutboundObserver`; swaps have their own `swap::SwapObserver`). The host
//! knows no metrics library; it calls an [`Observer`].

use std::time::Duration;

/// The `tracing` target of what only traces show (spans and events the log never prints): the
/// server's trace layer takes it, its log filters it out.
pub const TRACE_TARGET: &str = "turnstile::trace";

/// Receives what the plugin host does. Every method has a default that ignores it.
pub trait Observer: Send + Sync {
    /// One host call of `kind` that took `elapsed` and ended in `outcome`.
    fn host_call(&self, kind: HostCallKind, outcome: HostCallOutcome, elapsed: Duration) {
        let _ = (kind, outcome, elapsed);
    }
}

/// The host calls a plugin can make that are counted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, strum::IntoStaticStr)]
#[strum(serialize_all = "snake_case")]
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
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, strum::IntoStaticStr)]
#[strum(serialize_all = "snake_case")]
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
        self.into()
    }
}

impl HostCallOutcome {
    /// Every outcome, in the order of their values.
    pub const ALL: [Self; 3] = [Self::Ok, Self::Error, Self::Timeout];

    /// The name (a metric label value).
    pub fn as_str(self) -> &'static str {
        self.into()
    }
}
