//! Replacing the served plugin without a restart (`POST /admin/plugin`, SIGHUP). A candidate is
//! read, hashed, compiled (or loaded from the precompiled cache), checked against the contract,
//! and must pass the conformance smoke subset before one atomic install. A failed candidate
//! changes nothing: the old generation keeps serving.
//!
//! [`HotSwap`] is everything a swap needs, on the plugin side: the slot it installs into, the
//! runtime that compiles candidates, the corpus index they read, the operator's default settings.
//! `serve`, SIGHUP and the admin endpoint share one; none of them needs the HTTP state.

use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::check::{Check, smoke};
use crate::corpus::{CorpusError, CorpusIndex, CorpusPool};
use crate::plugin::{
    Generation, Plugin, PluginConfig, PluginError, PluginRuntime, PluginSlot, PluginSource,
    Sha256Hex,
};

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
            Self::Incompatible(_) => "incompatible_plugin",
            Self::Corpus(_) => "corpus_unavailable",
            Self::SmokeFailed { .. } => "smoke_failed",
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

/// What a swap needs, shared by `serve`, SIGHUP and `/admin/plugin`.
pub struct HotSwap {
    slot: Arc<PluginSlot>,
    runtime: Arc<PluginRuntime>,
    corpus: Arc<CorpusIndex>,
    default_config: PluginConfig,
    idle_connections: usize,
}

impl HotSwap {
    /// Swaps into `slot`, compiling with `runtime`; each candidate gets its own pool of at most
    /// `idle_connections` idle connections over `corpus`, and `default_config` unless the swap
    /// names its own.
    pub fn new(
        slot: Arc<PluginSlot>,
        runtime: Arc<PluginRuntime>,
        corpus: Arc<CorpusIndex>,
        default_config: PluginConfig,
        idle_connections: usize,
    ) -> Self {
        Self {
            slot,
            runtime,
            corpus,
            default_config,
            idle_connections,
        }
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
        expected_sha256: Option<&Sha256Hex>,
        config: Option<PluginConfig>,
    ) -> Result<Swapped, SwapError> {
        let started = Instant::now();
        let _one_at_a_time = self.slot.begin_swap();
        let previous = self.slot.current();
        let config = config.unwrap_or_else(|| self.default_config.clone());
        // The candidate gets its own pool over the same index, so its smoke checks count only
        // its own sessions, not those of the traffic the current generation serves meanwhile.
        let pool =
            CorpusPool::new(&self.corpus, self.idle_connections).map_err(SwapError::Corpus)?;
        let candidate =
            Plugin::load(&self.runtime, &source, config, pool).map_err(|e| match e {
                PluginError::Read { .. } => SwapError::Unreadable(e),
                other => SwapError::Incompatible(other),
            })?;
        if let Some(expected) = expected_sha256
            && candidate.sha256() != expected.as_str()
        {
            return Err(SwapError::Sha256Mismatch {
                expected: expected.clone(),
                actual: candidate.sha256().to_owned(),
            });
        }
        let smoke = smoke(&candidate);
        if let Some(failed) = smoke.iter().find(|c| !c.passed) {
            return Err(SwapError::SmokeFailed {
                check: failed.name.clone(),
                observed: failed.observed.clone(),
            });
        }
        let generation = self.slot.install(candidate, source);
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
