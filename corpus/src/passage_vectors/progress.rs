//! The progress of a long embedding run, told every few seconds in the log (and so on a
//! terminal): passages done of those to embed, the rate, the time left.

use std::time::{Duration, Instant};

/// How often a line is written.
const EVERY: Duration = Duration::from_secs(5);

/// Counts passages embedded and writes a line at most every [`EVERY`].
pub(super) struct Progress<'a> {
    model: &'a str,
    total: usize,
    reused: usize,
    done: usize,
    started: Instant,
    last: Instant,
}

impl<'a> Progress<'a> {
    pub(super) fn new(model: &'a str, total: usize, reused: usize) -> Self {
        let now = Instant::now();
        Self {
            model,
            total,
            reused,
            done: 0,
            started: now,
            last: now,
        }
    }

    /// `n` more passages embedded.
    pub(super) fn add(&mut self, n: usize) {
        self.done += n;
        if self.last.elapsed() >= EVERY && self.done < self.total {
            self.last = Instant::now();
            let (rate, left) = self.rate_and_left();
            tracing::info!(
                model = self.model,
                done = self.done,
                to_embed = self.total,
                reused = self.reused,
                per_second = format!("{rate:.0}"),
                "embedding passages: {} of {} ({:.0}/s, about {} s left)",
                self.done,
                self.total,
                rate,
                left.as_secs()
            );
        }
    }

    /// Passages per second so far, and the time left at that rate.
    fn rate_and_left(&self) -> (f64, Duration) {
        let seconds = self.started.elapsed().as_secs_f64().max(1e-3);
        #[allow(clippy::cast_precision_loss)]
        let rate = self.done as f64 / seconds;
        #[allow(clippy::cast_precision_loss)]
        let left = if rate > 0.0 {
            Duration::from_secs_f64((self.total - self.done.min(self.total)) as f64 / rate)
        } else {
            Duration::ZERO
        };
        (rate, left)
    }

    /// Seconds since the run started.
    pub(super) fn elapsed(&self) -> Duration {
        self.started.elapsed()
    }
}
