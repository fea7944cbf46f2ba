//! What one call's outbound requests did: each request reports itself once, when it ends
//! ([`Finish`]: the metrics' event, the log line), into the call's tally, which the call's
//! report ([`OutboundReport`]) is made from — with the backend's signal, if it sent one (a 429 or
//! 503, a timeout), for the gate.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use super::observe::{OutboundEvent, OutboundObserver, OutboundOutcome};
use crate::capabilities::backend::{
    Backend, FailureKind, SEVERAL_BACKENDS, SignalKind, UpstreamSignal,
};
use crate::capabilities::capability::Report;

/// Longest `Retry-After` taken from an upstream, in seconds (a larger one is cut to it).
pub const MAX_RETRY_AFTER_SECS: u64 = 3600;

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
    /// The last failure of a request that was no load signal, if any.
    pub failure: Option<FailureKind>,
    /// The grant the call's requests went through (as the operator wrote it), or `(several)`
    /// when they went through more than one; `None` when none was sent.
    pub origin: Option<String>,
    /// Requests cancelled because the client went away.
    pub cancelled: u32,
}

impl Report for OutboundReport {
    fn backend(&self) -> Backend {
        Backend {
            signal: self.signal,
            failure: self.failure,
            requests: self.requests,
            denied: self.denied,
            elapsed: self.elapsed,
            reached: self.origin.clone(),
        }
    }

    fn absorb(&mut self, later: &Self) {
        self.requests += later.requests;
        self.denied += later.denied;
        self.elapsed += later.elapsed;
        self.bytes_out += later.bytes_out;
        self.bytes_in += later.bytes_in;
        if later.signal.is_some() {
            self.signal = later.signal;
        }
        if later.failure.is_some() {
            self.failure = later.failure;
        }
        if let Some(origin) = &later.origin {
            self.note_origin(origin);
        }
        self.cancelled += later.cancelled;
    }
}

impl OutboundReport {
    fn note_origin(&mut self, label: &str) {
        match &self.origin {
            None => self.origin = Some(label.to_owned()),
            Some(seen) if seen == label => {}
            Some(_) => self.origin = Some(SEVERAL_BACKENDS.to_owned()),
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
    pub observer: Option<Arc<dyn OutboundObserver>>,
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
        tally(&self.tally, |t| {
            t.denied += 1;
            if outcome == OutboundOutcome::Cancelled {
                t.cancelled += 1;
            }
        });
        if let Some(observer) = &self.observer {
            observer.ended(&OutboundEvent {
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
        tally(&self.tally, |t| {
            t.requests += 1;
            t.note_origin(label);
        });
        if let Some(observer) = &self.observer {
            observer.started(label);
        }
        Finish(Arc::new(Finishing {
            reporter: self.clone(),
            label: label.to_owned(),
            started: Instant::now(),
            outcome: Mutex::new(OutboundOutcome::Error),
            bytes_out: AtomicU64::new(0),
            bytes_in: AtomicU64::new(0),
            done: AtomicBool::new(false),
            guest_bounded: AtomicBool::new(false),
            span: Mutex::new(None),
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
    /// The guest asked for a shorter timeout than the host's: a timeout is its own choice, no
    /// word from the backend.
    guest_bounded: AtomicBool,
    /// The request's span (traces): it ends when the request is reported.
    span: Mutex<Option<tracing::Span>>,
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

    /// A failure that is no load signal (401/403, another 4xx or 5xx, no connection).
    pub fn fail(&self, kind: FailureKind) {
        tally(&self.0.reporter.tally, |t| t.failure = Some(kind));
    }

    /// The guest shortened one of the host's timeouts for this request: its timeout is no
    /// backend signal.
    pub fn guest_bounded(&self) {
        self.0.guest_bounded.store(true, Ordering::Relaxed);
    }

    /// Request body bytes sent.
    pub fn add_bytes_out(&self, n: u64) {
        self.0.bytes_out.fetch_add(n, Ordering::Relaxed);
    }

    /// Response body bytes received.
    pub fn add_bytes_in(&self, n: u64) {
        self.0.bytes_in.fetch_add(n, Ordering::Relaxed);
    }

    /// The request's span, ended with it.
    pub fn traced(&self, span: tracing::Span) {
        *self.0.span.lock().unwrap_or_else(|p| p.into_inner()) = Some(span);
    }

    /// The response's status, on the request's span.
    pub fn record_status(&self, status: u16) {
        if let Some(span) = &*self.0.span.lock().unwrap_or_else(|p| p.into_inner()) {
            span.record("http.response.status_code", i64::from(status));
        }
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
        if outcome == OutboundOutcome::Cancelled {
            tally(&self.reporter.tally, |t| t.cancelled += 1);
        }
        if outcome == OutboundOutcome::Timeout && !self.guest_bounded.load(Ordering::Relaxed) {
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
        if let Some(span) = self.span.lock().unwrap_or_else(|p| p.into_inner()).take() {
            super::trace::record_outcome(&span, outcome);
        }
        if let Some(observer) = &self.reporter.observer {
            observer.ended(&OutboundEvent {
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

/// An upstream's `Retry-After` (RFC 9110 10.2.3): delta-seconds, or an HTTP-date taken as the
/// seconds from now to it (0 for a date past), at most [`MAX_RETRY_AFTER_SECS`]; anything else
/// is not taken.
pub fn retry_after(value: Option<&http::HeaderValue>) -> Option<Duration> {
    let value = value?.to_str().ok()?.trim();
    let seconds = match value.parse::<u64>() {
        Ok(seconds) => seconds,
        Err(_) => {
            let at = httpdate::parse_http_date(value).ok()?;
            let left = at
                .duration_since(std::time::SystemTime::now())
                .unwrap_or_default();
            // Rounded up: a client that waits the seconds said is never early.
            left.as_secs() + u64::from(left.subsec_nanos() > 0)
        }
    };
    Some(Duration::from_secs(seconds.min(MAX_RETRY_AFTER_SECS)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn of(value: &str) -> Option<u64> {
        retry_after(Some(&http::HeaderValue::from_str(value).unwrap())).map(|d| d.as_secs())
    }

    /// Delta-seconds and HTTP-dates are taken, bounded by an hour; what is neither is not.
    #[test]
    fn retry_after_takes_seconds_and_dates_within_its_bound() {
        assert_eq!(of("7"), Some(7));
        assert_eq!(of(" 0 "), Some(0));
        assert_eq!(of("86400"), Some(MAX_RETRY_AFTER_SECS));
        let in_a_minute = std::time::SystemTime::now() + Duration::from_secs(60);
        let seconds = of(&httpdate::fmt_http_date(in_a_minute)).unwrap();
        assert!((59..=61).contains(&seconds), "{seconds}");
        let next_year = std::time::SystemTime::now() + Duration::from_secs(365 * 86_400);
        assert_eq!(
            of(&httpdate::fmt_http_date(next_year)),
            Some(MAX_RETRY_AFTER_SECS)
        );
        assert_eq!(of("Wed, 21 Oct 2015 07:28:00 GMT"), Some(0));
        for bad in ["-1", "soon", "1.5", ""] {
            assert_eq!(of(bad), None, "{bad:?}");
        }
        assert_eq!(retry_after(None), None);
    }
}
