//! Adaptive concurrency (`--max-active auto`): the gate's limit follows the backend's capacity
//! instead of a guess. A gradient controller in the manner of Netflix's Gradient2 and Envoy's
//! adaptive concurrency filter, driven by the calls' own latency — the plugin call's execution
//! time (not the lease's hold time, which includes a wait for a global lease), from calls that
//! ran and returned: a call that never ran, failed on its own or was turned away by its backend
//! is no latency sample (a turned-away call is a *drop*, which backs the limit off).
//!
//! - every [`WINDOW`] samples, the window's mean execution time, smoothed, is the *recent*
//!   latency;
//! - the *baseline* is what calls take at a lower concurrency, measured from live traffic by a
//!   *probe*: for one stretch of [`PROBE_SAMPLES`] samples the limit is halved (never below the
//!   floor), and only calls admitted under that lower limit, once the leases out when it began
//!   are back, count — the calls admitted before, and beside them, ran loaded. The first probe comes after [`FIRST_PROBE_AFTER`] windows, then one every
//!   [`PROBE_EVERY`] windows, give or take [`PROBE_JITTER`] (replicas do not probe in step). A
//!   probe replaces the baseline, so a backend that became slower for good is learned again;
//!   the limit is never pinned to the floor to measure it;
//! - gradient = clamp(tolerance × baseline / recent, 0.5, 1): 1 while latency stays within the
//!   tolerance of the baseline (or before the first probe), lower when halving the concurrency
//!   made calls faster — the backend is saturated;
//! - new limit = limit × gradient + 1 (room for one more call, so the limit keeps probing
//!   upwards while latency holds), smoothed, then kept within `[min, max]`; it starts at
//!   `initial`, and until the backend first shows saturation (a probe finds calls faster at half
//!   the concurrency) or turns work away, a window whose calls kept their latency doubles it
//!   (smoothed: × 1.5), as a TCP slow start does — from the floor to a ceiling of 64 in about
//!   ten windows instead of 126;
//! - a window in which the gate never had more than half its limit in use does not raise the
//!   limit (the load, not the backend, was the bound).
//!
//! Lowering the limit never touches a running call: leases are given back only when their calls
//! return; new requests wait until fewer than the limit are out. Counting samples, not time, the
//! controller is deterministic for a given sequence of samples and seed (its tests feed them).

use std::time::Duration;

use serde::Serialize;

/// Samples per adjustment.
pub const WINDOW: usize = 16;

/// Windows before the first probe.
pub const FIRST_PROBE_AFTER: usize = 4;

/// Windows between two probes, on average.
pub const PROBE_EVERY: usize = 40;

/// How far the windows between two probes stray from [`PROBE_EVERY`], either way.
pub const PROBE_JITTER: usize = 10;

/// Samples a probe measures (of calls admitted under its lower limit).
pub const PROBE_SAMPLES: usize = 3 * WINDOW;

/// How much faster calls must be at half the concurrency for the backend to count as deep in
/// saturation (the limit then comes down to the probe's at once).
const DEEP_SATURATION: f64 = 1.6;

/// Weight of a new estimate against the current limit.
const SMOOTHING: f64 = 0.5;

/// Weight of a window's mean against the recent latency.
const RECENT_WEIGHT: f64 = 0.5;

/// Allowed range of a limit.
pub const LIMIT_RANGE: std::ops::RangeInclusive<usize> = 1..=1024;

/// How the limit adapts.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct AdaptiveConfig {
    /// The limit never goes below this (1..=1024).
    pub min: usize,
    /// Nor above this (min..=1024); it is also the most leases ever out.
    pub max: usize,
    /// Where it starts (min..=max).
    pub initial: usize,
    /// How much slower than the baseline calls may get before the limit comes down (1.0..=4.0;
    /// e.g. 1.2: 20 %).
    pub tolerance: f64,
}

/// Why an adaptive configuration is refused.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum AdaptiveConfigError {
    /// The limits are out of range or out of order.
    #[error(
        "invalid_limits: need 1 <= min <= initial <= max <= 1024, got min {min}, initial {initial}, max {max}"
    )]
    Limits {
        /// The floor.
        min: usize,
        /// The start.
        initial: usize,
        /// The ceiling.
        max: usize,
    },
    /// The tolerance is out of range.
    #[error("invalid_tolerance: the tolerance must be 1.0..=4.0, got {0}")]
    Tolerance(f64),
}

impl AdaptiveConfig {
    /// Checks the bounds.
    pub fn new(
        min: usize,
        max: usize,
        initial: usize,
        tolerance: f64,
    ) -> Result<Self, AdaptiveConfigError> {
        if !(LIMIT_RANGE.contains(&min)
            && LIMIT_RANGE.contains(&max)
            && min <= initial
            && initial <= max)
        {
            return Err(AdaptiveConfigError::Limits { min, initial, max });
        }
        if !(1.0..=4.0).contains(&tolerance) {
            return Err(AdaptiveConfigError::Tolerance(tolerance));
        }
        Ok(Self {
            min,
            max,
            initial,
            tolerance,
        })
    }
}

/// How a lease's work ended, as the adaptive limit takes it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum WorkOutcome {
    /// The work ran and returned: its hold time is a latency sample.
    #[default]
    Completed,
    /// The backend turned the work away (it answered 429 or 503, or timed out): a drop, which
    /// backs the limit off (by [`DROP_BACKOFF`] per window with a drop, as Netflix's limiters
    /// treat dropped requests) and is no latency sample — a fast refusal must not raise it.
    Dropped,
    /// The work never ran (a waiter promoted, then gone): no sample at all.
    NeverRan,
    /// The work failed on its own (an error, a trap) without a word from its backend: no sample
    /// at all, neither a latency (a fast failure must not raise the limit) nor a drop.
    Failed,
}

/// One released lease, as the controller takes it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) struct Sample {
    /// How long its work took (the plugin call's execution time).
    pub(super) work: Duration,
    /// Leases out when it was granted, itself included.
    pub(super) granted_in_use: usize,
    /// Leases out when it was released, itself included.
    pub(super) in_use: usize,
    /// How its work ended.
    pub(super) outcome: WorkOutcome,
}

/// What a window with a drop multiplies the limit by.
pub const DROP_BACKOFF: f64 = 0.9;

/// The controller's view, as `/state` shows it.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct AdaptiveSnapshot {
    /// The floor.
    pub min: usize,
    /// The ceiling.
    pub max: usize,
    /// The tolerance over the baseline.
    pub tolerance: f64,
    /// The baseline latency, ms (absent before the first window).
    pub baseline_ms: Option<f64>,
    /// The last window's mean latency, ms.
    pub recent_ms: Option<f64>,
    /// Limit changes so far.
    pub changes: u64,
}

/// The gradient controller (see the module's description).
#[derive(Debug)]
pub(super) struct Gradient {
    config: AdaptiveConfig,
    /// The limit as a real number (the gate uses it rounded).
    estimate: f64,
    phase: Phase,
    baseline: Option<f64>,
    recent: Option<f64>,
    sum: f64,
    samples: usize,
    /// The most leases out at a release in this window.
    peak_in_use: usize,
    /// Drops in this window.
    drops: usize,
    changes: u64,
    /// The probes' jitter (xorshift).
    rng: u64,
    /// Doubling while calls keep their latency, until the backend first shows saturation (a
    /// probe finds calls faster at half the concurrency) or turns work away.
    slow_start: bool,
}

/// What the controller is doing.
#[derive(Debug, Clone, Copy)]
enum Phase {
    /// Adjusting the limit, `windows` windows before the next probe.
    Adapting { windows: usize },
    /// Measuring the baseline at `limit`: `sum` of `samples` calls admitted under it, and
    /// `drops`, once the `old` leases out when it began have been released (calls admitted under
    /// it while they ran shared the backend with them).
    Probing {
        limit: usize,
        old: usize,
        sum: f64,
        samples: usize,
        drops: usize,
    },
}

impl Gradient {
    /// A controller whose probes are jittered from `seed`.
    pub(super) fn new(config: AdaptiveConfig, seed: u64) -> Self {
        Self {
            estimate: config.initial as f64,
            phase: Phase::Adapting {
                windows: FIRST_PROBE_AFTER,
            },
            config,
            baseline: None,
            recent: None,
            sum: 0.0,
            samples: 0,
            peak_in_use: 0,
            drops: 0,
            changes: 0,
            rng: seed | 1,
            slow_start: true,
        }
    }

    /// The limit now (the probe's while the baseline is measured).
    pub(super) fn limit(&self) -> usize {
        match self.phase {
            Phase::Probing { limit, .. } => limit,
            Phase::Adapting { .. } => self.rounded(),
        }
    }

    fn rounded(&self) -> usize {
        (self.estimate.round() as usize).clamp(self.config.min, self.config.max)
    }

    /// Windows until the next probe: [`PROBE_EVERY`] ± [`PROBE_JITTER`].
    fn next_probe(&mut self) -> usize {
        self.rng ^= self.rng << 13;
        self.rng ^= self.rng >> 7;
        self.rng ^= self.rng << 17;
        PROBE_EVERY - PROBE_JITTER + (self.rng % (2 * PROBE_JITTER as u64 + 1)) as usize
    }

    /// One released lease. Returns the new limit when it changed.
    pub(super) fn sample(&mut self, sample: Sample) -> Option<usize> {
        let Sample {
            work,
            granted_in_use,
            in_use,
            outcome,
        } = sample;
        let no_sample = matches!(outcome, WorkOutcome::NeverRan | WorkOutcome::Failed);
        let before = self.limit();
        if let Phase::Probing {
            limit,
            old,
            sum,
            samples,
            drops,
        } = &mut self.phase
        {
            let probe_limit = *limit;
            if *old > 0 {
                // Draining what was out when the probe began: every release counts down.
                *old -= 1;
                return None;
            }
            if no_sample || granted_in_use > probe_limit {
                // No sample, or admitted under the higher limit: it ran loaded.
                return None;
            }
            match outcome {
                WorkOutcome::Dropped => *drops += 1,
                _ => {
                    *sum += work.as_secs_f64();
                    *samples += 1;
                }
            }
            if *samples + *drops < PROBE_SAMPLES {
                return None;
            }
            if *samples > 0 {
                self.baseline = Some((*sum / *samples as f64).max(1e-6));
            }
            // Halving the concurrency made calls much faster: the backend is deep in
            // saturation; come down to the probe's limit at once, and probe again soon rather
            // than in PROBE_EVERY windows (from far too high, a halving per probe).
            let ratio = match (self.baseline, self.recent) {
                (Some(baseline), Some(recent)) => recent / baseline,
                _ => 1.0,
            };
            if ratio > self.config.tolerance {
                self.slow_start = false;
            }
            let deep = ratio > DEEP_SATURATION;
            let windows = if deep {
                self.estimate = self.estimate.min(probe_limit as f64);
                FIRST_PROBE_AFTER
            } else {
                self.next_probe()
            };
            self.phase = Phase::Adapting { windows };
            return self.changed(before);
        }
        if no_sample {
            return None;
        }
        match outcome {
            WorkOutcome::Dropped => self.drops += 1,
            _ => self.sum += work.as_secs_f64(),
        }
        self.samples += 1;
        self.peak_in_use = self.peak_in_use.max(in_use);
        if self.samples < WINDOW {
            return None;
        }
        let completed = self.samples - self.drops;
        let drops = self.drops;
        let mean = (completed > 0).then(|| (self.sum / completed as f64).max(1e-6));
        let peak = self.peak_in_use;
        (self.sum, self.samples, self.peak_in_use, self.drops) = (0.0, 0, 0, 0);
        if let Some(mean) = mean {
            self.recent = Some(
                self.recent
                    .map_or(mean, |r| r * (1.0 - RECENT_WEIGHT) + mean * RECENT_WEIGHT),
            );
        }
        if drops > 0 {
            // The backend refused work: back off, whatever the latency of what it took.
            self.slow_start = false;
            self.estimate = (self.estimate * DROP_BACKOFF)
                .clamp(self.config.min as f64, self.config.max as f64);
        } else if let Some(recent) = self.recent {
            let gradient = self.baseline.map_or(1.0, |b| {
                (self.config.tolerance * b / recent).clamp(0.5, 1.0)
            });
            let mut target = if self.slow_start && gradient >= 1.0 {
                self.estimate * 2.0
            } else {
                self.estimate * gradient + 1.0
            };
            // The load, not the backend, bounded this window: no evidence for more.
            if 2 * peak <= before && target > self.estimate {
                target = self.estimate;
            }
            self.estimate = (self.estimate * (1.0 - SMOOTHING) + target * SMOOTHING)
                .clamp(self.config.min as f64, self.config.max as f64);
        }
        if let Phase::Adapting { windows } = &mut self.phase {
            if *windows == 0 {
                self.phase = Phase::Probing {
                    limit: ((self.estimate / 2.0).round() as usize)
                        .clamp(self.config.min, self.config.max),
                    old: in_use.saturating_sub(1),
                    sum: 0.0,
                    samples: 0,
                    drops: 0,
                };
            } else {
                *windows -= 1;
            }
        }
        self.changed(before)
    }

    /// The limit, if it is not `before` any more.
    fn changed(&mut self, before: usize) -> Option<usize> {
        let after = self.limit();
        (after != before).then(|| {
            self.changes += 1;
            after
        })
    }

    pub(super) fn snapshot(&self) -> AdaptiveSnapshot {
        AdaptiveSnapshot {
            min: self.config.min,
            max: self.config.max,
            tolerance: self.config.tolerance,
            baseline_ms: self.baseline.map(|s| s * 1e3),
            recent_ms: self.recent.map(|s| s * 1e3),
            changes: self.changes,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A backend with `cores` cores and `work` of CPU per call: up to `cores` calls at once take
    /// `work` each; more share the cores and all take longer.
    fn cpu_latency(work: Duration, cores: usize, in_use: usize) -> Duration {
        work.mul_f64((in_use as f64 / cores as f64).max(1.0))
    }

    fn completed(work: Duration, in_use: usize) -> Sample {
        Sample {
            work,
            granted_in_use: in_use,
            in_use,
            outcome: WorkOutcome::Completed,
        }
    }

    /// Runs `rounds` windows of a saturated gate (every slot in use, each call admitted at the
    /// limit of its window) over `latency(limit, i)` for the window's i-th call, returning the
    /// limits after each window.
    fn run(
        gradient: &mut Gradient,
        rounds: usize,
        mut latency: impl FnMut(usize, usize) -> Duration,
    ) -> Vec<usize> {
        let mut limits = Vec::new();
        for _ in 0..rounds {
            let limit = gradient.limit();
            for i in 0..WINDOW {
                gradient.sample(completed(latency(limit, i), limit));
            }
            limits.push(gradient.limit());
        }
        limits
    }

    fn controller(min: usize, max: usize, initial: usize) -> Gradient {
        Gradient::new(AdaptiveConfig::new(min, max, initial, 1.2).unwrap(), 7)
    }

    #[test]
    fn it_starts_at_its_initial_limit() {
        assert_eq!(controller(1, 64, 20).limit(), 20);
        assert_eq!(controller(4, 64, 4).limit(), 4);
    }

    #[test]
    fn on_a_saturating_backend_the_limit_settles_near_its_capacity_from_either_side() {
        let work = Duration::from_millis(10);
        for initial in [1, 64] {
            let mut g = controller(1, 64, initial);
            let limits = run(&mut g, 400, |limit, _| cpu_latency(work, 2, limit));
            // From far too high, down within a few probes (each halves it at once while calls
            // at half the concurrency are much faster); then near the capacity (2 cores): above
            // it the calls only share the cores.
            assert!(
                limits[40..].iter().all(|l| *l <= 8),
                "from {initial}: {limits:?}"
            );
            let settled = &limits[200..];
            assert!(
                settled.iter().all(|l| (1..=6).contains(l)),
                "from {initial}: {limits:?}"
            );
            let mut sorted = settled.to_vec();
            sorted.sort_unstable();
            assert!(
                (2..=4).contains(&sorted[sorted.len() / 2]),
                "from {initial}: {limits:?}"
            );
        }
    }

    #[test]
    fn when_latency_does_not_grow_the_limit_rises_to_its_ceiling_and_stays() {
        let mut g = controller(1, 32, 1);
        // Slow start: from 1 to 32 in about ten windows; the probes at half the limit find the
        // same latency, so it is held there but for the probes (in this model a probe lasts
        // five windows of the 45 or so between them: the drain of the leases out when it
        // begins counts as windows, where in time it takes about one call).
        let limits = run(&mut g, 400, |_, _| Duration::from_millis(50));
        assert!(limits[20..].iter().all(|l| *l >= 16), "{limits:?}");
        let at_ceiling = limits[20..].iter().filter(|l| **l == 32).count();
        assert!(at_ceiling * 100 >= (400 - 20) * 85, "{limits:?}");
    }

    /// Calls of two kinds (a fast lookup, a slow model call), mixed at random, whatever the
    /// concurrency: the windows' means swing, and the limit must not read the swings as load.
    #[test]
    fn a_bimodal_workload_that_does_not_saturate_keeps_the_limit_high() {
        let mut g = controller(1, 32, 8);
        let mut state = 0x9e37_79b9_7f4a_7c15_u64;
        let coin: Vec<bool> = (0..400 * WINDOW)
            .map(|_| {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                state.is_multiple_of(2)
            })
            .collect();
        let mut n = 0;
        let limits = run(&mut g, 400, |_, _| {
            n += 1;
            if coin[n % coin.len()] {
                Duration::from_millis(2)
            } else {
                Duration::from_millis(200)
            }
        });
        let tail = &limits[100..];
        let mean = tail.iter().sum::<usize>() as f64 / tail.len() as f64;
        // The ceiling (32) but for the probes (16) and the windows the swings take from it.
        assert!(mean >= 22.0, "mean limit {mean}: {limits:?}");
    }

    #[test]
    fn a_lightly_used_gate_does_not_raise_its_limit_and_the_floor_holds() {
        let mut g = controller(3, 32, 8);
        for _ in 0..20 * WINDOW {
            g.sample(completed(Duration::from_millis(5), 1));
        }
        assert_eq!(g.limit(), 8, "one call at a time is no evidence for more");
        // Calls much slower than the baseline: down, but never under the floor (until a probe
        // finds them as slow at a lower concurrency, and the limit climbs again).
        let mut limits = Vec::new();
        for _ in 0..40 * WINDOW {
            let limit = g.limit();
            g.sample(completed(Duration::from_millis(500), limit));
            limits.push(g.limit());
        }
        assert!(limits.iter().all(|l| *l >= 3), "{limits:?}");
        assert!(limits.contains(&3), "{limits:?}");
    }

    #[test]
    fn a_backend_that_became_slower_for_good_is_learned_again() {
        let mut g = controller(1, 64, 8);
        run(&mut g, 200, |limit, _| {
            cpu_latency(Duration::from_millis(10), 2, limit)
        });
        // Ten times slower at any concurrency: down, then a probe measures the new latency as
        // the baseline and the limit comes back to the same capacity.
        let limits = run(&mut g, 400, |limit, _| {
            cpu_latency(Duration::from_millis(100), 2, limit)
        });
        let mut sorted = limits[200..].to_vec();
        sorted.sort_unstable();
        assert!((2..=4).contains(&sorted[sorted.len() / 2]), "{limits:?}");
    }

    #[test]
    fn a_probe_counts_only_calls_admitted_under_its_limit() {
        let mut g = controller(1, 32, 32);
        // Up to the first probe, at 32: 50 ms calls.
        while matches!(g.phase, Phase::Adapting { .. }) {
            let limit = g.limit();
            g.sample(completed(Duration::from_millis(50), limit));
        }
        let probe = g.limit();
        assert!(probe < 32, "{probe}");
        // Calls admitted before, still loaded (500 ms), released during the probe: ignored.
        for _ in 0..PROBE_SAMPLES * 2 {
            g.sample(Sample {
                work: Duration::from_millis(500),
                granted_in_use: 32,
                in_use: 32,
                outcome: WorkOutcome::Completed,
            });
        }
        assert_eq!(g.limit(), probe, "the probe is still measuring");
        for _ in 0..PROBE_SAMPLES {
            g.sample(completed(Duration::from_millis(20), probe));
        }
        assert!(matches!(g.phase, Phase::Adapting { .. }));
        let baseline = g.snapshot().baseline_ms.unwrap();
        assert!((baseline - 20.0).abs() < 1e-6, "{baseline}");
    }

    #[test]
    fn bad_configurations_are_refused() {
        assert!(AdaptiveConfig::new(0, 4, 1, 1.2).is_err());
        assert!(AdaptiveConfig::new(4, 2, 3, 1.2).is_err());
        assert!(AdaptiveConfig::new(1, 4, 5, 1.2).is_err());
        assert!(AdaptiveConfig::new(1, 1025, 1, 1.2).is_err());
        assert!(AdaptiveConfig::new(1, 4, 1, 0.9).is_err());
        assert!(AdaptiveConfig::new(1, 1024, 1024, 4.0).is_ok());
    }

    /// A backend that refuses work fast (429s) must bring the limit down, not up: its fast
    /// refusals are drops, not latency samples; leases that never ran, and calls that failed on
    /// their own, move nothing.
    #[test]
    fn drops_back_the_limit_off_and_nothing_else_moves_it() {
        let mut g = controller(1, 64, 32);
        let start = g.limit();
        assert_eq!(start, 32);
        for outcome in [WorkOutcome::NeverRan, WorkOutcome::Failed] {
            for _ in 0..(10 * WINDOW) {
                g.sample(Sample {
                    work: Duration::from_millis(1),
                    granted_in_use: start,
                    in_use: start,
                    outcome,
                });
            }
            assert_eq!(g.limit(), start, "{outcome:?} is no sample");
        }
        let mut limits = Vec::new();
        for _ in 0..10 {
            for i in 0..WINDOW {
                // Mostly fast refusals: 1 ms each, which as latency would raise the limit.
                let outcome = if i % 4 == 0 {
                    WorkOutcome::Completed
                } else {
                    WorkOutcome::Dropped
                };
                let limit = g.limit();
                g.sample(Sample {
                    work: Duration::from_millis(1),
                    granted_in_use: limit,
                    in_use: limit,
                    outcome,
                });
            }
            limits.push(g.limit());
        }
        assert!(limits.iter().all(|l| *l <= start), "{limits:?}");
        assert!(*limits.iter().min().unwrap() < start / 2, "{limits:?}");
        assert!(*limits.last().unwrap() * 3 <= start * 2, "{limits:?}");
    }
}
