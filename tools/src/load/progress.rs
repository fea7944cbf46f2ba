//! Live progress on stderr: an indicatif bar on a terminal; otherwise a plain line every
//! [`PLAIN_EVERY`]; nothing with `--quiet`. Each update reads users running, requests per second
//! over the last [`RECENT`], p50/p99 so far and the counts by outcome.

use std::io::IsTerminal;
use std::sync::atomic::Ordering;
use std::time::Duration;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

use super::stats::Outcome;
use super::user::Shared;

/// Window of the "recent" request rate.
pub(crate) const RECENT: Duration = Duration::from_secs(5);
/// Period of the plain lines written when stderr is not a terminal.
const PLAIN_EVERY: Duration = Duration::from_secs(5);

/// Which part of the run is going on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Phase {
    /// Users are sending.
    Load,
    /// No new requests; waiting for those in flight.
    Drain,
}

enum Mode {
    Quiet,
    Bar(ProgressBar),
    Plain { next: Duration },
}

/// The progress display of one run.
pub(crate) struct Progress {
    mode: Mode,
    users: u32,
    duration: Duration,
}

impl Progress {
    /// A bar when stderr is a terminal, plain lines otherwise, nothing when `quiet`.
    pub fn new(quiet: bool, users: u32, duration: Duration) -> Self {
        let mode = if quiet {
            Mode::Quiet
        } else if std::io::stderr().is_terminal() {
            let millis = u64::try_from(duration.as_millis()).unwrap_or(u64::MAX);
            let bar = ProgressBar::with_draw_target(Some(millis), ProgressDrawTarget::stderr());
            if let Ok(style) =
                ProgressStyle::with_template("{spinner} {elapsed:>4} [{bar:24}] {msg}")
            {
                bar.set_style(style.progress_chars("=> "));
            }
            Mode::Bar(bar)
        } else {
            Mode::Plain { next: PLAIN_EVERY }
        };
        Self {
            mode,
            users,
            duration,
        }
    }

    /// Reads the shared state and shows it (also keeps the per-second records current: notes
    /// the users running and closes finished seconds).
    pub fn update(&mut self, shared: &Shared, phase: Phase) {
        let now = shared.now();
        let running = shared.running.load(Ordering::Acquire);
        let in_flight = shared.in_flight.load(Ordering::Acquire);
        let line = {
            let mut stats = shared.stats();
            stats.note_users(now, running);
            stats.close_seconds_before(now);
            if matches!(self.mode, Mode::Quiet) {
                return;
            }
            let window = RECENT.min(now);
            let (recent, covered) = stats.completions_between(now.saturating_sub(window), now);
            let rate = if covered > 0.0 {
                recent as f64 / covered
            } else {
                0.0
            };
            let percentile = |q| {
                stats
                    .quantile_ms(q)
                    .map_or_else(|| "-".to_owned(), |v| format!("{v:.0} ms"))
            };
            let outcomes = outcomes_text(stats.outcomes().iter().map(|(o, n)| (*o, *n)));
            let what = match phase {
                Phase::Load => format!("users {running}/{}", self.users),
                Phase::Drain => format!("draining, {in_flight} in flight"),
            };
            let ttft = stats
                .ttft_quantile_ms(0.5)
                .map_or_else(String::new, |v| format!(" ttft p50 {v:.0} ms"));
            format!(
                "{what} | {rate:.1} req/s (last {:.0} s) | p50 {} p99 {}{ttft} | {} requests [{outcomes}]",
                window.as_secs_f64().max(1.0),
                percentile(0.5),
                percentile(0.99),
                stats.requests(),
            )
        };
        match &mut self.mode {
            Mode::Quiet => {}
            Mode::Bar(bar) => {
                let pos = now.min(self.duration);
                bar.set_position(u64::try_from(pos.as_millis()).unwrap_or(u64::MAX));
                bar.set_message(line);
                bar.tick();
            }
            Mode::Plain { next } => {
                if now >= *next {
                    eprintln!("[{:>6.1} s] {line}", now.as_secs_f64());
                    while *next <= now {
                        *next += PLAIN_EVERY;
                    }
                }
            }
        }
    }

    /// Removes the bar (the final table follows on stdout).
    pub fn finish(self) {
        if let Mode::Bar(bar) = self.mode {
            bar.finish_and_clear();
        }
    }
}

/// `200: 12, timeout: 1`.
pub(crate) fn outcomes_text(outcomes: impl Iterator<Item = (Outcome, u64)>) -> String {
    let parts: Vec<String> = outcomes.map(|(o, n)| format!("{}: {n}", o.key())).collect();
    if parts.is_empty() {
        "none yet".into()
    } else {
        parts.join(", ")
    }
}
