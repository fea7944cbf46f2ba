//! Adaptive concurrency (`--max-active auto`): the gate's limit follows the backend's capacity
//! instead of a guess. A gradient controller in the manner of Netflix's Gradient2 and Envoy's
//! adaptive concurrency filter, driven by the leases' own hold times (the plugin calls' latency):
//!
//! - every [`WINDOW`] released leases, the window's mean hold time is the *recent* latency;
//! - the *baseline* is what calls take when few run: the first window, and one window in every
//!   [`REMEASURE_EVERY`], run at the floor (`min`) and set it, as Envoy re-measures its minimum
//!   RTT at a low concurrency — so a limit that starts far too high learns what calls cost, and a
//!   backend that became slower for good is learned again; between them the baseline is the
//!   lowest recent latency seen;
//! - gradient = clamp(tolerance × baseline / recent, 0.5, 1): 1 while latency stays within the
//!   tolerance of the baseline, lower as calls slow down together;
//! - new limit = limit × gradient + 1 (room for one more call, so the limit keeps probing
//!   upwards while latency holds), smoothed, then kept within `[min, max]`;
//! - a window in which the gate never had more than half its limit in use does not raise the
//!   limit (the load, not the backend, was the bound).
//!
//! Lowering the limit never touches a running call: leases are given back only when their calls
//! return; new requests wait until fewer than the limit are out. Counting samples, not time, the
//! controller is deterministic for a given sequence of hold times (its tests feed them).

use std::time::Duration;

use serde::Serialize;

/// Released leases per adjustment.
pub const WINDOW: usize = 16;

/// Windows between two baseline measurements at the floor.
pub const REMEASURE_EVERY: usize = 50;

/// Weight of a new estimate against the current limit.
const SMOOTHING: f64 = 0.5;

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
    /// `Some(n)`: adapting, `n` windows before the next measurement at the floor; `None`: this
    /// window measures the baseline at the floor.
    until_measure: Option<usize>,
    baseline: Option<f64>,
    recent: Option<f64>,
    sum: f64,
    samples: usize,
    /// The most leases out at a release in this window.
    peak_in_use: usize,
    /// Drops in this window.
    drops: usize,
    changes: u64,
}

impl Gradient {
    pub(super) fn new(config: AdaptiveConfig) -> Self {
        Self {
            estimate: config.initial as f64,
            until_measure: None,
            config,
            baseline: None,
            recent: None,
            sum: 0.0,
            samples: 0,
            peak_in_use: 0,
            drops: 0,
            changes: 0,
        }
    }

    /// The limit now (the floor while the baseline is measured).
    pub(super) fn limit(&self) -> usize {
        match self.until_measure {
            None => self.config.min,
            Some(_) => (self.estimate.round() as usize).clamp(self.config.min, self.config.max),
        }
    }

    /// One lease held for `held`, released while `in_use` leases (it included) were out, its
    /// work ended as `outcome`. Returns the new limit when it changed.
    pub(super) fn sample(
        &mut self,
        held: Duration,
        in_use: usize,
        outcome: WorkOutcome,
    ) -> Option<usize> {
        match outcome {
            WorkOutcome::NeverRan => return None,
            WorkOutcome::Dropped => self.drops += 1,
            WorkOutcome::Completed => self.sum += held.as_secs_f64(),
        }
        self.samples += 1;
        self.peak_in_use = self.peak_in_use.max(in_use);
        if self.samples < WINDOW {
            return None;
        }
        let completed = self.samples - self.drops;
        let drops = self.drops;
        let recent = (completed > 0).then(|| (self.sum / completed as f64).max(1e-6));
        let peak = self.peak_in_use;
        (self.sum, self.samples, self.peak_in_use, self.drops) = (0.0, 0, 0, 0);
        let before = self.limit();
        if drops > 0 && self.until_measure.is_some() {
            // The backend refused work: back off, whatever the latency of what it took.
            self.estimate = (self.estimate * DROP_BACKOFF)
                .clamp(self.config.min as f64, self.config.max as f64);
            if let Some(recent) = recent {
                self.recent = Some(recent);
            }
            return self.changed(before);
        }
        let Some(recent) = recent else {
            // Only drops at the floor: nothing learned; measure again.
            return None;
        };
        self.recent = Some(recent);
        let Some(windows) = self.until_measure else {
            // A window at the floor: the baseline; then back to where the limit was.
            self.baseline = Some(recent);
            self.until_measure = Some(REMEASURE_EVERY);
            return self.changed(before);
        };
        if windows == 0 {
            self.until_measure = None;
            return self.changed(before);
        }
        self.until_measure = Some(windows - 1);
        let baseline = self.baseline.map_or(recent, |b| b.min(recent));
        self.baseline = Some(baseline);
        let gradient = (self.config.tolerance * baseline / recent).clamp(0.5, 1.0);
        let mut target = self.estimate * gradient + 1.0;
        // The load, not the backend, bounded this window: no evidence for more.
        if 2 * peak <= before && target > self.estimate {
            target = self.estimate;
        }
        self.estimate = (self.estimate * (1.0 - SMOOTHING) + target * SMOOTHING)
            .clamp(self.config.min as f64, self.config.max as f64);
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

    /// Runs `rounds` windows of a saturated gate (every slot in use) over `latency(limit)`,
    /// returning the limits after each window.
    fn run(
        gradient: &mut Gradient,
        rounds: usize,
        latency: impl Fn(usize) -> Duration,
    ) -> Vec<usize> {
        let mut limits = Vec::new();
        for _ in 0..rounds {
            let limit = gradient.limit();
            for _ in 0..WINDOW {
                gradient.sample(latency(limit), limit, WorkOutcome::Completed);
            }
            limits.push(gradient.limit());
        }
        limits
    }

    #[test]
    fn on_a_saturating_backend_the_limit_settles_near_its_capacity_from_either_side() {
        let work = Duration::from_millis(10);
        for initial in [1, 64] {
            let mut g = Gradient::new(AdaptiveConfig::new(1, 64, initial, 1.2).unwrap());
            let limits = run(&mut g, 60, |limit| cpu_latency(work, 2, limit));
            // Past the first windows, every limit is near the capacity (2 cores), but for the
            // periodic window at the floor (1) that measures the baseline.
            let settled: Vec<usize> = limits[30..].iter().copied().filter(|l| *l > 1).collect();
            assert!(
                settled.len() >= 28 && settled.iter().all(|l| (2..=4).contains(l)),
                "from {initial}: {limits:?}"
            );
        }
    }

    #[test]
    fn when_latency_does_not_grow_the_limit_rises_to_its_ceiling() {
        let mut g = Gradient::new(AdaptiveConfig::new(1, 32, 1, 1.2).unwrap());
        // Half a slot more per window (smoothed): from 1 to 32 in 62 windows, then held; the
        // window at the floor that re-measures the baseline comes after REMEASURE_EVERY.
        let limits = run(&mut g, REMEASURE_EVERY + 1, |_| Duration::from_millis(50));
        assert!(limits.windows(2).all(|w| w[0] <= w[1]), "{limits:?}");
        assert!(limits.last() > Some(&22), "{limits:?}");
        let limits = run(&mut g, 40, |_| Duration::from_millis(50));
        assert_eq!(limits.last(), Some(&32), "{limits:?}");
    }

    #[test]
    fn a_lightly_used_gate_does_not_raise_its_limit_and_the_floor_holds() {
        let mut g = Gradient::new(AdaptiveConfig::new(3, 32, 8, 1.2).unwrap());
        for _ in 0..10 * WINDOW {
            g.sample(Duration::from_millis(5), 1, WorkOutcome::Completed);
        }
        assert_eq!(g.limit(), 8, "one call at a time is no evidence for more");
        // Calls much slower than the baseline: down, but never under the floor.
        for _ in 0..40 * WINDOW {
            g.sample(Duration::from_millis(500), 8, WorkOutcome::Completed);
        }
        assert_eq!(g.limit(), 3);
    }

    #[test]
    fn a_backend_that_became_slower_for_good_is_learned_again() {
        let mut g = Gradient::new(AdaptiveConfig::new(1, 64, 8, 1.2).unwrap());
        run(&mut g, 30, |limit| {
            cpu_latency(Duration::from_millis(10), 2, limit)
        });
        // Ten times slower at any concurrency: down to the floor, then the floor's latency is
        // the new baseline and the limit climbs back to the same capacity.
        let limits = run(&mut g, 120, |limit| {
            cpu_latency(Duration::from_millis(100), 2, limit)
        });
        assert!(limits.contains(&1), "{limits:?}");
        let settled: Vec<usize> = limits[90..].iter().copied().filter(|l| *l > 1).collect();
        assert!(settled.iter().all(|l| (2..=4).contains(l)), "{limits:?}");
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
    /// refusals are drops, not latency samples; and leases that never ran move nothing.
    #[test]
    fn drops_back_the_limit_off_and_never_raise_it() {
        let config = AdaptiveConfig::new(1, 64, 32, 1.2).unwrap();
        let mut g = Gradient::new(config);
        // The baseline window at the floor, then windows at the limit: 500 ms calls.
        for _ in 0..WINDOW {
            g.sample(Duration::from_millis(500), 1, WorkOutcome::Completed);
        }
        let start = g.limit();
        assert_eq!(start, 32);
        for _ in 0..(10 * WINDOW) {
            g.sample(Duration::from_millis(1), start, WorkOutcome::NeverRan);
        }
        assert_eq!(g.limit(), start, "leases that never ran are no samples");
        let mut limits = Vec::new();
        for _ in 0..10 {
            for i in 0..WINDOW {
                // Mostly fast refusals: 1 ms each, which as latency would raise the limit.
                let outcome = if i % 4 == 0 {
                    WorkOutcome::Completed
                } else {
                    WorkOutcome::Dropped
                };
                g.sample(Duration::from_millis(1), start, outcome);
            }
            limits.push(g.limit());
        }
        assert!(limits.windows(2).all(|w| w[1] <= w[0]), "{limits:?}");
        assert!(*limits.last().unwrap() < start / 2, "{limits:?}");
    }
}
