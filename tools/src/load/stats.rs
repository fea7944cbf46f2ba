//! What the users measured, in bounded memory: one HDR histogram of every latency, counts by
//! outcome, completions per 100 ms (for rates and the plateau), and one record per second of the
//! run (users, completions, failures, outcomes, p50/p99/max of the requests completed in it).
//!
//! With `--chat --stream`, the time to the first content delta (TTFT) is kept the same way: one
//! HDR histogram of the run, and p50/p99 per second.
//!
//! Nothing is kept per request. Memory grows with the run's length (10 counters and one small
//! record per second), never with its request count. A second keeps its own HDR histogram only
//! while it is "open": it is closed [`SECOND_GRACE_S`] seconds after it ends, when its
//! percentiles are computed and the histogram dropped, so at most a few exist at once.

use std::collections::BTreeMap;
use std::time::Duration;

use hdrhistogram::Histogram;

/// Latencies are recorded in microseconds; longer than this (two hours) saturate.
const MAX_LATENCY_US: u64 = 2 * 3_600 * 1_000_000;
/// HDR precision: 3 significant digits (0.1 % error).
const SIGFIG: u8 = 3;
/// Per-second histograms are coarser (1 % error) and short-lived.
const SECOND_SIGFIG: u8 = 2;
/// Width of a completion-count bin.
const BIN_US: u64 = 100_000;
/// A second's percentiles are computed this long after it ends (stragglers recorded a little
/// late still land in its histogram).
pub(crate) const SECOND_GRACE_S: u64 = 2;

/// Why a request failed before a complete HTTP response was read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) enum ErrorKind {
    /// `--timeout-s` passed before the full response arrived.
    Timeout,
    /// The connection could not be made.
    Connect,
    /// The response body could not be read.
    Body,
    /// Anything else the client reported.
    Other,
    /// A streamed answer carried an error event (or an event that was no chunk).
    StreamError,
    /// A streamed answer's body ended without `data: [DONE]`.
    StreamIncomplete,
}

/// How one request ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) enum Outcome {
    /// A complete response with this HTTP status.
    Http(u16),
    /// No complete response.
    Error(ErrorKind),
}

impl Outcome {
    /// Classifies a client error.
    pub fn from_error(e: &reqwest::Error) -> Self {
        Self::Error(if e.is_timeout() {
            ErrorKind::Timeout
        } else if e.is_connect() {
            ErrorKind::Connect
        } else if e.is_body() || e.is_decode() {
            ErrorKind::Body
        } else {
            ErrorKind::Other
        })
    }

    /// The key used in tables and JSON: the HTTP code (`"200"`) or the error kind.
    pub fn key(self) -> String {
        match self {
            Self::Http(code) => code.to_string(),
            Self::Error(ErrorKind::Timeout) => "timeout".into(),
            Self::Error(ErrorKind::Connect) => "connect_error".into(),
            Self::Error(ErrorKind::Body) => "body_error".into(),
            Self::Error(ErrorKind::Other) => "request_error".into(),
            Self::Error(ErrorKind::StreamError) => "stream_error".into(),
            Self::Error(ErrorKind::StreamIncomplete) => "stream_incomplete".into(),
        }
    }

    /// Anything but a 2xx response counts as a failure.
    pub fn is_failure(self) -> bool {
        !matches!(self, Self::Http(200..=299))
    }
}

/// One second of the run: `[second, second + 1)` seconds after the start.
#[derive(Debug, Default)]
pub(crate) struct Second {
    /// Most users running at any observation during the second.
    pub users: u32,
    /// Requests completed (any outcome) in the second.
    pub requests: u64,
    /// Of which failures.
    pub failures: u64,
    /// By outcome.
    pub outcomes: BTreeMap<Outcome, u64>,
    /// Latency percentiles of the requests completed in the second, once it is closed.
    pub p50_us: Option<u64>,
    /// 99th percentile.
    pub p99_us: Option<u64>,
    /// Slowest.
    pub max_us: Option<u64>,
    /// Median time to first content delta of the streams completed in the second.
    pub ttft_p50_us: Option<u64>,
    /// Its 99th percentile.
    pub ttft_p99_us: Option<u64>,
    open: Option<Histogram<u64>>,
    /// The second's TTFT histogram, made at its first TTFT (streams only), until it is closed.
    ttft_open: Option<Histogram<u64>>,
}

impl Second {
    fn close(&mut self) {
        if let Some(h) = self.open.take()
            && !h.is_empty()
        {
            self.p50_us = Some(h.value_at_quantile(0.50));
            self.p99_us = Some(h.value_at_quantile(0.99));
            self.max_us = Some(h.max());
        }
        if let Some(h) = self.ttft_open.take()
            && !h.is_empty()
        {
            self.ttft_p50_us = Some(h.value_at_quantile(0.50));
            self.ttft_p99_us = Some(h.value_at_quantile(0.99));
        }
    }
}

/// All measurements of one run.
pub(crate) struct Stats {
    latency: Histogram<u64>,
    /// Time to the first content delta of every stream that had one.
    ttft: Histogram<u64>,
    outcomes: BTreeMap<Outcome, u64>,
    failures: u64,
    bins: Vec<u32>,
    seconds: Vec<Second>,
    closed: usize,
    all_running_at: Option<Duration>,
    last_completion: Option<Duration>,
}

impl Stats {
    /// Empty.
    pub fn new() -> Result<Self, hdrhistogram::CreationError> {
        Ok(Self {
            latency: new_histogram()?,
            ttft: new_histogram()?,
            outcomes: BTreeMap::new(),
            failures: 0,
            bins: Vec::new(),
            seconds: Vec::new(),
            closed: 0,
            all_running_at: None,
            last_completion: None,
        })
    }

    /// A request completed `at` (since the start) after `latency`.
    pub fn record(&mut self, at: Duration, latency: Duration, outcome: Outcome) {
        let us = micros(latency).max(1);
        self.latency.saturating_record(us);
        *self.outcomes.entry(outcome).or_default() += 1;
        let failed = outcome.is_failure();
        self.failures += u64::from(failed);
        self.last_completion = Some(self.last_completion.map_or(at, |l| l.max(at)));

        let bin = usize::try_from(micros(at) / BIN_US).unwrap_or(usize::MAX);
        if bin < usize::MAX {
            if self.bins.len() <= bin {
                self.bins.resize(bin + 1, 0);
            }
            self.bins[bin] = self.bins[bin].saturating_add(1);
        }

        let second = self.second_mut(at);
        second.requests += 1;
        second.failures += u64::from(failed);
        *second.outcomes.entry(outcome).or_default() += 1;
        if let Some(h) = second.open.as_mut() {
            h.saturating_record(us);
        }
    }

    /// A stream completed `at` (since the start) had its first content delta `ttft` after it was
    /// sent (recorded beside [`Stats::record`] of the same request).
    pub fn record_first_delta(&mut self, at: Duration, ttft: Duration) {
        let us = micros(ttft).max(1);
        self.ttft.saturating_record(us);
        let index = usize::try_from(at.as_secs()).unwrap_or(usize::MAX);
        if index < self.closed {
            // Its second was already reduced (a clock far behind): the run's histogram has it.
            return;
        }
        let second = self.second_mut(at);
        if second.ttft_open.is_none() {
            second.ttft_open = Histogram::new_with_bounds(1, MAX_LATENCY_US, SECOND_SIGFIG).ok();
        }
        if let Some(h) = second.ttft_open.as_mut() {
            h.saturating_record(us);
        }
    }

    /// The TTFT histogram of every stream that had a first delta (microseconds).
    pub fn ttft(&self) -> &Histogram<u64> {
        &self.ttft
    }

    /// TTFT at quantile `q` in milliseconds, if any stream had a first delta.
    pub fn ttft_quantile_ms(&self, q: f64) -> Option<f64> {
        (!self.ttft.is_empty()).then(|| ms(self.ttft.value_at_quantile(q)))
    }

    /// `running` users were running `at` (since the start).
    pub fn note_users(&mut self, at: Duration, running: u32) {
        let second = self.second_mut(at);
        second.users = second.users.max(running);
    }

    /// The last user started `at`: from then on every user is running.
    pub fn all_running(&mut self, at: Duration) {
        self.all_running_at = Some(at);
    }

    /// When every user was running, if they all started.
    pub fn all_running_at(&self) -> Option<Duration> {
        self.all_running_at
    }

    /// Closes the seconds that ended at least [`SECOND_GRACE_S`] seconds before `now`.
    pub fn close_seconds_before(&mut self, now: Duration) {
        let limit = usize::try_from(now.as_secs().saturating_sub(SECOND_GRACE_S))
            .unwrap_or(usize::MAX)
            .min(self.seconds.len());
        while self.closed < limit {
            self.seconds[self.closed].close();
            self.closed += 1;
        }
    }

    /// Closes every second (at the end of the run).
    pub fn close_all(&mut self) {
        for s in &mut self.seconds[self.closed..] {
            s.close();
        }
        self.closed = self.seconds.len();
    }

    /// Requests completed so far.
    pub fn requests(&self) -> u64 {
        self.latency.len()
    }

    /// Failures (non-2xx or no response) so far.
    pub fn failures(&self) -> u64 {
        self.failures
    }

    /// Counts by outcome so far.
    pub fn outcomes(&self) -> &BTreeMap<Outcome, u64> {
        &self.outcomes
    }

    /// When the last request completed, since the start.
    pub fn last_completion(&self) -> Option<Duration> {
        self.last_completion
    }

    /// The latency histogram of every completed request (microseconds).
    pub fn latency(&self) -> &Histogram<u64> {
        &self.latency
    }

    /// Latency at quantile `q` in milliseconds, if anything completed.
    pub fn quantile_ms(&self, q: f64) -> Option<f64> {
        (!self.latency.is_empty()).then(|| ms(self.latency.value_at_quantile(q)))
    }

    /// The per-second records, in order from second 0.
    pub fn seconds(&self) -> &[Second] {
        &self.seconds
    }

    /// Completions between `from` and `to` (since the start), counted in whole 100 ms bins
    /// inside the interval: `(requests, seconds actually covered)`.
    pub fn completions_between(&self, from: Duration, to: Duration) -> (u64, f64) {
        let first = micros(from).div_ceil(BIN_US);
        let end = micros(to) / BIN_US;
        if end <= first {
            return (0, 0.0);
        }
        let lo = usize::try_from(first)
            .unwrap_or(usize::MAX)
            .min(self.bins.len());
        let hi = usize::try_from(end)
            .unwrap_or(usize::MAX)
            .min(self.bins.len());
        let count = self.bins[lo..hi].iter().map(|&c| u64::from(c)).sum();
        (count, (end - first) as f64 * BIN_US as f64 / 1e6)
    }

    /// Whole-bin boundary at or after `t` (seconds).
    pub fn bin_ceil_s(t: Duration) -> f64 {
        (micros(t).div_ceil(BIN_US) * BIN_US) as f64 / 1e6
    }

    /// Whole-bin boundary at or before `t` (seconds).
    pub fn bin_floor_s(t: Duration) -> f64 {
        (micros(t) / BIN_US * BIN_US) as f64 / 1e6
    }

    fn second_mut(&mut self, at: Duration) -> &mut Second {
        // A run lasts at most a day plus the timeout; clamp rather than trust a wild clock.
        let index = usize::try_from(at.as_secs().min(200_000)).unwrap_or(200_000);
        while self.seconds.len() <= index {
            self.seconds.push(Second {
                open: Histogram::new_with_bounds(1, MAX_LATENCY_US, SECOND_SIGFIG).ok(),
                ..Second::default()
            });
        }
        &mut self.seconds[index]
    }
}

fn new_histogram() -> Result<Histogram<u64>, hdrhistogram::CreationError> {
    Histogram::new_with_bounds(1, MAX_LATENCY_US, SIGFIG)
}

/// Whole microseconds, saturating.
pub(crate) fn micros(d: Duration) -> u64 {
    u64::try_from(d.as_micros()).unwrap_or(u64::MAX)
}

/// Microseconds to milliseconds.
pub(crate) fn ms(us: u64) -> f64 {
    us as f64 / 1000.0
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(secs: f64) -> Duration {
        Duration::from_secs_f64(secs)
    }

    #[test]
    fn seconds_bins_and_percentiles() {
        let mut stats = Stats::new().expect("histogram");
        for i in 0..10 {
            stats.record(s(0.5), s(0.01 * f64::from(i + 1)), Outcome::Http(200));
        }
        stats.record(s(1.25), s(2.0), Outcome::Http(503));
        stats.record(s(1.95), s(3.0), Outcome::Error(ErrorKind::Timeout));
        stats.note_users(s(0.1), 3);
        stats.note_users(s(0.9), 2);
        stats.close_all();

        assert_eq!(stats.requests(), 12);
        assert_eq!(stats.failures(), 2);
        let seconds = stats.seconds();
        assert_eq!(seconds.len(), 2);
        assert_eq!(seconds[0].users, 3);
        assert_eq!(seconds[0].requests, 10);
        assert_eq!(seconds[1].failures, 2);
        let p50 = ms(seconds[0].p50_us.expect("closed"));
        assert!((49.0..=51.0).contains(&p50), "{p50}");
        assert_eq!(stats.completions_between(s(0.0), s(1.0)), (10, 1.0));
        // 1.25 s is in bin 12, 1.95 s in bin 19: [1.2, 1.9) holds one.
        assert_eq!(stats.completions_between(s(1.15), s(1.9)).0, 1);
        assert_eq!(Outcome::Error(ErrorKind::Timeout).key(), "timeout");
    }

    #[test]
    fn first_deltas_have_their_own_percentiles() {
        let mut stats = Stats::new().expect("histogram");
        assert_eq!(stats.ttft_quantile_ms(0.5), None);
        for i in 0..10 {
            let at = s(0.5);
            stats.record(at, s(2.0), Outcome::Http(200));
            stats.record_first_delta(at, s(0.1 + 0.01 * f64::from(i)));
        }
        // A request without a first delta (a failure) adds to the latency only.
        stats.record(s(1.5), s(0.2), Outcome::Http(503));
        stats.close_all();
        assert_eq!(stats.ttft().len(), 10);
        assert_eq!(stats.requests(), 11);
        let p50 = stats.ttft_quantile_ms(0.5).expect("some");
        assert!((140.0..=150.0).contains(&p50), "{p50}");
        let seconds = stats.seconds();
        let second_p50 = ms(seconds[0].ttft_p50_us.expect("closed"));
        assert!((140.0..=151.0).contains(&second_p50), "{second_p50}");
        assert_eq!(seconds[1].ttft_p50_us, None);
        assert!(seconds.iter().all(|s| s.ttft_open.is_none()));
    }

    #[test]
    fn closing_keeps_few_histograms_open() {
        let mut stats = Stats::new().expect("histogram");
        for t in 0..100 {
            stats.record(s(f64::from(t) + 0.5), s(0.1), Outcome::Http(200));
            stats.close_seconds_before(s(f64::from(t) + 0.6));
            let open = stats.seconds.iter().filter(|s| s.open.is_some()).count();
            assert!(open <= 3, "{open} open at {t}");
        }
    }
}
