//! Replacing the served plugin without a restart (`POST /admin/plugin`, SIGHUP). A candidate is
//! read, hashed, compiled (or loaded from the precompiled cache), checked against the contract,
//! and must pass the conformance smoke subset before one atomic install. A failed candidate
//! changes nothing: the old generation keeps serving.
//!
//! [`HotSwap`] is everything a swap needs, on the plugin side: the slot it installs into, the
//! runtime that compiles candidates, the operator's default settings (a candidate reads the corpus
//! through a sibling of the current generation's pool: the same corpus, loaded once).
//! `serve`, SIGHUP and the admin endpoint share one; none of them needs the HTTP state.

use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::check::{Check, smoke};
use crate::observe::Observer;
use crate::{
    Generation, Plugin, PluginConfig, PluginError, PluginRuntime, PluginSlot, PluginSource,
    RuntimeOptions, Sha256Hex,
};
use turnstile_corpus::CorpusError;

/// Why a candidate was refused.
#[derive(Debug, thiserror::Error)]
pub enum SwapError {
    /// The file could not be read.
    #[error("plugin_unreadable: {0}")]
    Unreadable(#[source] PluginError),
    /// The file is not the one the operator pinned.
    #[error("sha256_mismatch: expected {expected}, the file has {actual}")]
    Sha256Mismatch {
        /// What the operator asked for.
        expected: Sha256Hex,
        /// What the file hashes to.
        actual: String,
    },
    /// Not a component of the contract (world, imports, version).
    #[error("incompatible_plugin: {0}")]
    Incompatible(#[source] PluginError),
    /// No corpus connections could be opened for the candidate.
    #[error("corpus_unavailable: {0}")]
    Corpus(#[source] CorpusError),
    /// The server is pinned and the swap did not name the sha256 it installs.
    #[error(
        "sha256_required: the served plugin is pinned to {pinned}; a swap must give the sha256 of its candidate"
    )]
    PinRequired {
        /// The current pin.
        pinned: Sha256Hex,
    },
    /// A smoke call did not return within the conformance call deadline.
    #[error("timeout: {check}: {observed}")]
    Timeout {
        /// The check whose call timed out.
        check: String,
        /// What it observed.
        observed: String,
    },
    /// Another swap installed a generation while this candidate was being checked: nothing was
    /// installed; sending the swap again installs it over the new generation.
    #[error(
        "swap_conflict: generation {installed} was installed while this candidate was checked; send the swap again to install it over that one"
    )]
    Conflict {
        /// The generation installed meanwhile.
        installed: u64,
    },
    /// [`MAX_CANDIDATES_CHECKED`] candidates are being checked already.
    #[error(
        "swap_busy: {MAX_CANDIDATES_CHECKED} candidates are being checked already; send the swap again when one is done"
    )]
    Busy,
    /// It loaded but failed the smoke subset of `turnstile check`.
    #[error("smoke_failed: {check}: {observed}")]
    SmokeFailed {
        /// The first check that failed.
        check: String,
        /// What it observed.
        observed: String,
    },
}

impl SwapError {
    /// The machine-readable code.
    pub fn code(&self) -> &'static str {
        match self {
            Self::Unreadable(_) => "plugin_unreadable",
            Self::Sha256Mismatch { .. } => "sha256_mismatch",
            Self::PinRequired { .. } => "sha256_required",
            Self::Incompatible(_) => "incompatible_plugin",
            Self::Corpus(_) => "corpus_unavailable",
            Self::Timeout { .. } => "timeout",
            Self::SmokeFailed { .. } => "smoke_failed",
            Self::Conflict { .. } => "swap_conflict",
            Self::Busy => "swap_busy",
        }
    }
}

/// A completed swap.
pub struct Swapped {
    /// Now serving new requests.
    pub generation: Generation,
    /// What served before (still finishing the calls it admitted).
    pub previous: Generation,
    /// From the request to the install.
    pub elapsed: Duration,
    /// The smoke checks the candidate passed.
    pub smoke: Vec<Check>,
}

/// What asked for a swap, which decides the sha256 rule.
///
/// The rule, the same on every path: once any plugin was installed with a pin (`--plugin-sha256`
/// at startup, or an admin swap that names a `sha256`), the server is pinned. A reload (SIGHUP)
/// must then find the file matching the current pin; an admin swap must name the sha256 of its
/// candidate, which becomes the pin. An unpinned server swaps freely.
#[derive(Debug, Clone)]
pub enum Trigger {
    /// SIGHUP: reload the serving generation's source, under the current pin.
    Reload,
    /// `POST /admin/plugin`, with the sha256 the request names, if any.
    Admin {
        /// The candidate's expected sha256; it becomes the pin.
        sha256: Option<Sha256Hex>,
    },
}

/// The engines a swap uses.
pub struct Runtimes {
    /// Where plugins serve: no epoch interruption, no fuel.
    pub serving: Arc<PluginRuntime>,
    /// How the engine that checks a candidate is made (`call_deadline` set): each candidate
    /// gets a new one, so its deadline interrupts only its own calls, and its abandoned calls
    /// (see [`crate::MAX_ABANDONED_CALLS`]) hold up nothing else.
    pub conformance: RuntimeOptions,
}

/// Candidates checked (compiled and smoke-checked) at once; one more is refused with
/// [`SwapError::Busy`]. Each costs a compile's CPU and memory; no lock is held meanwhile.
pub const MAX_CANDIDATES_CHECKED: usize = 2;

/// What a swap needs, shared by `serve`, SIGHUP and `/admin/plugin`.
pub struct HotSwap {
    slot: Arc<PluginSlot>,
    runtime: Arc<PluginRuntime>,
    conformance: RuntimeOptions,
    /// Candidates being checked now.
    checking: std::sync::atomic::AtomicUsize,
    default_config: PluginConfig,
    idle_connections: usize,
    pin: std::sync::Mutex<Option<Sha256Hex>>,
    observer: Arc<dyn Observer>,
}

impl HotSwap {
    /// Swaps into `slot`, compiling with the serving runtime (and counting each swap in
    /// `metrics`); a candidate's smoke checks run on the conformance runtime (a call deadline:
    /// conformance work is not serving, so a looping or hung candidate is stopped there and
    /// refused). Each candidate gets its own pool of at most `idle_connections` idle
    /// connections, a sibling of the current generation's (the same corpus, loaded once), and
    /// `default_config` unless the swap names its own.
    pub fn new(
        slot: Arc<PluginSlot>,
        runtimes: Runtimes,
        default_config: PluginConfig,
        idle_connections: usize,
        pin: Option<Sha256Hex>,
        observer: Arc<dyn Observer>,
    ) -> Self {
        Self {
            slot,
            runtime: runtimes.serving,
            conformance: runtimes.conformance,
            checking: std::sync::atomic::AtomicUsize::new(0),
            default_config,
            idle_connections,
            pin: std::sync::Mutex::new(pin),
            observer,
        }
    }

    /// The sha256 every install must match now, if the server is pinned.
    pub fn pin(&self) -> Option<Sha256Hex> {
        self.pin.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// Candidates being compiled and checked now (at most [`MAX_CANDIDATES_CHECKED`]).
    pub fn candidates_checking(&self) -> usize {
        self.checking.load(std::sync::atomic::Ordering::SeqCst)
    }

    /// The slot swaps install into.
    pub fn slot(&self) -> &Arc<PluginSlot> {
        &self.slot
    }

    /// Loads and checks the candidate at `source`, then installs it. Blocks (compiles): call it
    /// from a blocking thread.
    pub fn swap(
        &self,
        source: PluginSource,
        trigger: Trigger,
        config: Option<PluginConfig>,
    ) -> Result<Swapped, SwapError> {
        let started = Instant::now();
        let outcome = self.try_swap(source, trigger, config, started);
        let result = match &outcome {
            Ok(_) => "swapped",
            Err(e) => e.code(),
        };
        self.observer.swap(result, started.elapsed());
        outcome
    }

    fn try_swap(
        &self,
        source: PluginSource,
        trigger: Trigger,
        config: Option<PluginConfig>,
        started: Instant,
    ) -> Result<Swapped, SwapError> {
        // Checked without holding the install lock: a candidate that takes long (or hangs) to
        // compile or check holds up no other swap.
        let previous = self.slot.current();
        let Some(_checking) = Checking::enter(&self.checking) else {
            return Err(SwapError::Busy);
        };
        let pinned = self.pin();
        let pinned_at_start = pinned.clone();
        let expected = match (&trigger, pinned) {
            (Trigger::Reload, pinned) => pinned,
            (
                Trigger::Admin {
                    sha256: Some(given),
                },
                _,
            ) => Some(given.clone()),
            (Trigger::Admin { sha256: None }, Some(pinned)) => {
                return Err(SwapError::PinRequired { pinned });
            }
            (Trigger::Admin { sha256: None }, None) => None,
        };
        let expected_sha256 = expected.as_ref();
        let config = config.unwrap_or_else(|| self.default_config.clone());
        // The candidate gets its own pool over the same index, so its smoke checks count only
        // its own sessions, not those of the traffic the current generation serves meanwhile;
        // a sibling of the current one, sharing the corpus already loaded in memory.
        let pool = previous
            .plugin
            .corpus()
            .sibling(self.idle_connections)
            .map_err(SwapError::Corpus)?;
        let refused = |e: PluginError| match e {
            PluginError::Read { .. } => SwapError::Unreadable(e),
            other => SwapError::Incompatible(other),
        };
        let bytes = source.read().map_err(refused)?;
        let actual = crate::sha256_hex(&bytes);
        if let Some(expected) = expected_sha256
            && actual != expected.as_str()
        {
            return Err(SwapError::Sha256Mismatch {
                expected: expected.clone(),
                actual,
            });
        }
        // The smoke checks run on the conformance runtime, then the same bytes are loaded for
        // serving (the two engines compile differently: only one has epoch interruption).
        let conformance = PluginRuntime::new(self.conformance.clone()).map_err(refused)?;
        let trial = Plugin::from_bytes(&conformance, &source, &bytes, config.clone(), pool.clone())
            .map_err(refused)?;
        let smoke = smoke(&Arc::new(trial));
        if let Some(failed) = smoke.iter().find(|c| !c.passed) {
            let (check, observed) = (failed.name.clone(), failed.observed.clone());
            return Err(if observed.starts_with("timeout") {
                SwapError::Timeout { check, observed }
            } else {
                SwapError::SmokeFailed { check, observed }
            });
        }
        let candidate =
            Plugin::from_bytes(&self.runtime, &source, &bytes, config, pool).map_err(refused)?;
        // The install: one atomic step, and only over the generation (and under the pin) that
        // this candidate was checked against.
        let installing = self.slot.begin_swap();
        let now = self.slot.current();
        if now.number != previous.number {
            return Err(SwapError::Conflict {
                installed: now.number,
            });
        }
        let mut pin = self.pin.lock().unwrap_or_else(|p| p.into_inner());
        if *pin != pinned_at_start {
            return Err(SwapError::Conflict {
                installed: now.number,
            });
        }
        let generation = self.slot.install(candidate, source);
        if let Some(new_pin) = expected {
            *pin = Some(new_pin);
        }
        drop(pin);
        drop(installing);
        let elapsed = started.elapsed();
        tracing::info!(
            generation = generation.number,
            plugin = generation.plugin.name(),
            sha256 = generation.plugin.sha256(),
            previous = previous.number,
            swap_ms = elapsed.as_secs_f64() * 1e3,
            "plugin swapped"
        );
        Ok(Swapped {
            generation,
            previous,
            elapsed,
            smoke,
        })
    }
}

/// A candidate being checked: counted while it lives.
struct Checking<'a>(&'a std::sync::atomic::AtomicUsize);

impl<'a> Checking<'a> {
    /// Counts one more candidate, unless [`MAX_CANDIDATES_CHECKED`] are being checked already.
    fn enter(checking: &'a std::sync::atomic::AtomicUsize) -> Option<Self> {
        use std::sync::atomic::Ordering;
        checking
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| {
                (n < MAX_CANDIDATES_CHECKED).then_some(n + 1)
            })
            .ok()
            .map(|_| Self(checking))
    }
}

impl Drop for Checking<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, std::sync::atomic::Ordering::SeqCst);
    }
}
