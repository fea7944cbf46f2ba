//! Replacing the served plugin: a candidate is read, hashed against the pin, compiled, checked
//! against the contract and smoke-checked on the conformance engine, without the install lock;
//! then one atomic install over the generation it was checked against.

use std::sync::Arc;
use std::time::{Duration, Instant};

use super::hot_swap::{Checking, HotSwap, MAX_CANDIDATES_CHECKED, Trigger};
use crate::check::{Check, smoke};
use crate::{
    Generation, Plugin, PluginConfig, PluginError, PluginRuntime, PluginSource, Sha256Hex,
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
        "swap_conflict: plugin generation {installed} over corpus generation {corpus} was installed while this candidate was checked; send the swap again to install it over that one"
    )]
    Conflict {
        /// The plugin generation serving now.
        installed: u64,
        /// The corpus generation serving now.
        corpus: u64,
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

impl HotSwap {
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
        let expected = trigger
            .expected(pinned)
            .map_err(|pinned| SwapError::PinRequired { pinned })?;
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
        // A corpus swap in between counts too: this candidate reads the corpus it was checked on.
        if !now.same_as(&previous) {
            return Err(SwapError::Conflict {
                installed: now.number,
                corpus: now.corpus.number,
            });
        }
        let mut pin = self.pin.lock().unwrap_or_else(|p| p.into_inner());
        if *pin != pinned_at_start {
            return Err(SwapError::Conflict {
                installed: now.number,
                corpus: now.corpus.number,
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
