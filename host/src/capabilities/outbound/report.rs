//! What one call's outbound requests did: each request reports itself once, when it ends
//! ([`Finish`]: the metrics' event, the log line), into the call's tally, which the call's
//! report ([`OutboundReport`]) is made from — with the backend's signal, if it sent one (a 429 or
//! 503, a timeout), for the gate.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::capabilities::capability::Report;
use crate::observe::{Observer, OutboundEvent, OutboundOutcome};

/// Longest `Retry-After` taken from an upstream, in seconds (a larger one is cut to it).
pub const MAX_RETRY_AFTER_SECS: u64 = 3600;

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

/// What one call's outbound requests did.
#[derive(Debug, Clone, Default)]
pub struct OutboundReport {
    /// Requests sent.
    pub requests: u32,
    /// Requests refused before they were sent (no grant, a per-call bound).
    pub denied: u32,
    /// Their time, from each request to the end of its response body, added up.
    pub elapsed: Duration,
    /// Request body bytes sent.
    pub bytes_out: u64,
    /// Response body bytes received.
    pub bytes_in: u64,
    /// The backend's last signal that it is past its capacity, if any.
    pub signal: Option<UpstreamSignal>,
}

impl Report for OutboundReport {
    fn absorb(&mut self, later: &Self) {
        self.requests += later.requests;
        self.denied += later.denied;
        self.elapsed += later.elapsed;
        self.bytes_out += later.bytes_out;
        self.bytes_in += later.bytes_in;
        if later.signal.is_some() {
            self.signal = later.signal;
        }
    }
}

/// One call's outbound tally, shared by its requests (which may outlive a host function).
pub type Tally = Arc<Mutex<OutboundReport>>;

/// Adds to the tally.
pub fn tally(tally: &Tally, update: impl FnOnce(&mut OutboundReport)) {
    update(&mut tally.lock().unwrap_or_else(|p| p.into_inner()));
}

/// The facts a request reports with.
#[derive(Clone)]
pub struct Reporter {
    /// The plugin.
    pub plugin: Arc<str>,
    /// The request it serves.
    pub request_id: u64,
    /// Told of every request.
    pub observer: Option<Arc<dyn Observer>>,
    /// The call's tally.
    pub tally: Tally,
}

impl Reporter {
    /// A request refused before it was sent: logged (plugin, origin, reason), counted, tallied.
    pub fn refused(&self, origin: &str, label: &str, outcome: OutboundOutcome, reason: &str) {
        tracing::warn!(
            plugin = &*self.plugin,
            request_id = self.request_id,
            origin,
            reason,
            "outbound request refused"
        );
        tally(&self.tally, |t| t.denied += 1);
        if let Some(observer) = &self.observer {
            observer.outbound(&OutboundEvent {
                origin: label.to_owned(),
                outcome,
                started: false,
                elapsed: Duration::ZERO,
                bytes_out: 0,
                bytes_in: 0,
            });
        }
    }

    /// A request about to be sent through the grant `label`: counted in flight until its
    /// [`Finish`] ends.
    pub fn start(&self, label: &str) -> Finish {
        tally(&self.tally, |t| t.requests += 1);
        if let Some(observer) = &self.observer {
            observer.outbound_started(label);
        }
        Finish(Arc::new(Finishing {
            reporter: self.clone(),
            label: label.to_owned(),
            started: Instant::now(),
            outcome: Mutex::new(OutboundOutcome::Error),
            bytes_out: AtomicU64::new(0),
            bytes_in: AtomicU64::new(0),
            done: AtomicBool::new(false),
        }))
    }
}

/// How a sent request ends, shared by its future and its bodies: it reports once — when
/// [`Finish::end`] is called, or when the last handle goes.
#[derive(Clone)]
pub struct Finish(Arc<Finishing>);

struct Finishing {
    reporter: Reporter,
    label: String,
    started: Instant,
    outcome: Mutex<OutboundOutcome>,
    bytes_out: AtomicU64,
    bytes_in: AtomicU64,
    done: AtomicBool,
}

impl Finish {
    /// How it ended (the latest word wins: a status, then a body's failure).
    pub fn set_outcome(&self, outcome: OutboundOutcome) {
        *self.0.outcome.lock().unwrap_or_else(|p| p.into_inner()) = outcome;
    }

    /// The backend's signal, for the gate.
    pub fn signal(&self, signal: UpstreamSignal) {
        tally(&self.0.reporter.tally, |t| t.signal = Some(signal));
    }

    /// Request body bytes sent.
    pub fn add_bytes_out(&self, n: u64) {
        self.0.bytes_out.fetch_add(n, Ordering::Relaxed);
    }

    /// Response body bytes received.
    pub fn add_bytes_in(&self, n: u64) {
        self.0.bytes_in.fetch_add(n, Ordering::Relaxed);
    }

    /// Reports the request now (once).
    pub fn end(&self) {
        self.0.end();
    }
}

impl Finishing {
    fn end(&self) {
        if self.done.swap(true, Ordering::SeqCst) {
            return;
        }
        let elapsed = self.started.elapsed();
        let outcome = *self.outcome.lock().unwrap_or_else(|p| p.into_inner());
        let (bytes_out, bytes_in) = (
            self.bytes_out.load(Ordering::Relaxed),
            self.bytes_in.load(Ordering::Relaxed),
        );
        tally(&self.reporter.tally, |t| {
            t.elapsed += elapsed;
            t.bytes_out += bytes_out;
            t.bytes_in += bytes_in;
        });
        if outcome == OutboundOutcome::Timeout {
            tally(&self.reporter.tally, |t| {
                t.signal = Some(UpstreamSignal {
                    kind: SignalKind::Timeout,
                    retry_after: None,
                })
            });
        }
        tracing::debug!(
            plugin = &*self.reporter.plugin,
            request_id = self.reporter.request_id,
            origin = self.label,
            outcome = outcome.as_str(),
            outbound_ms = elapsed.as_secs_f64() * 1e3,
            bytes_out,
            bytes_in,
            "outbound request done"
        );
        if let Some(observer) = &self.reporter.observer {
            observer.outbound(&OutboundEvent {
                origin: self.label.clone(),
                outcome,
                started: true,
                elapsed,
                bytes_out,
                bytes_in,
            });
        }
    }
}

impl Drop for Finishing {
    fn drop(&mut self) {
        self.end();
    }
}

/// An upstream's `Retry-After` in delta-seconds (at most [`MAX_RETRY_AFTER_SECS`]); an
/// HTTP-date or anything else is not taken.
pub fn retry_after(value: Option<&http::HeaderValue>) -> Option<Duration> {
    let seconds: u64 = value?.to_str().ok()?.trim().parse().ok()?;
    Some(Duration::from_secs(seconds.min(MAX_RETRY_AFTER_SECS)))
}
