//! Replacing the served plugin without a restart (`POST /admin/plugin`, SIGHUP). A candidate is
//! read, hashed, compiled (or loaded from the precompiled cache), checked against the contract,
//! and must pass the conformance smoke subset before one atomic install. A failed candidate
//! changes nothing: the old generation keeps serving.

use std::time::{Duration, Instant};

use crate::check::{Check, smoke};
use crate::corpus::CorpusPool;
use crate::http::AppState;
use crate::plugin::{Generation, Plugin, PluginConfig, PluginError, PluginSource};
use crate::server::MAX_IDLE_CONNECTIONS;

/// Why a candidate was refused.
#[derive(Debug, thiserror::Error)]
pub enum SwapError {
    /// The file could not be read.
    #[error("plugin_unreadable: {0}")]
    Unreadable(String),
    /// The file is not the one the operator pinned.
    #[error("sha256_mismatch: expected {expected}, the file has {actual}")]
    Sha256Mismatch {
        /// What the operator asked for.
        expected: String,
        /// What the file hashes to.
        actual: String,
    },
    /// Not a component of the contract (world, imports, version).
    #[error("incompatible_plugin: {0}")]
    Incompatible(String),
    /// It loaded but failed the smoke subset of `turnstile check`.
    #[error("smoke_failed: {0}")]
    SmokeFailed(String),
}

impl SwapError {
    /// The machine-readable code.
    pub fn code(&self) -> &'static str {
        match self {
            Self::Unreadable(_) => "plugin_unreadable",
            Self::Sha256Mismatch { .. } => "sha256_mismatch",
            Self::Incompatible(_) => "incompatible_plugin",
            Self::SmokeFailed(_) => "smoke_failed",
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

/// Loads and checks the candidate at `source`, then installs it. Blocks (compiles): call it from
/// a blocking thread.
pub fn swap(
    state: &AppState,
    source: PluginSource,
    expected_sha256: Option<&str>,
    config: Option<PluginConfig>,
) -> Result<Swapped, SwapError> {
    let started = Instant::now();
    let _one_at_a_time = state.plugins.begin_swap();
    let previous = state.plugins.current();
    let config = config.unwrap_or_else(|| (*state.plugin_config).clone());
    // The candidate gets its own pool over the same index, so its smoke checks count only its
    // own sessions, not those of the traffic the current generation is serving meanwhile.
    let pool = CorpusPool::new(&state.corpus, MAX_IDLE_CONNECTIONS)
        .map_err(|e| SwapError::Incompatible(format!("corpus: {e}")))?;
    let candidate = Plugin::load(&state.runtime, &source, config, pool).map_err(|e| match e {
        PluginError::Read { .. } => SwapError::Unreadable(e.to_string()),
        other => SwapError::Incompatible(other.to_string()),
    })?;
    if let Some(expected) = expected_sha256
        && !candidate.sha256().eq_ignore_ascii_case(expected)
    {
        return Err(SwapError::Sha256Mismatch {
            expected: expected.to_owned(),
            actual: candidate.sha256().to_owned(),
        });
    }
    let smoke = smoke(&candidate);
    if let Some(failed) = smoke.iter().find(|c| !c.passed) {
        return Err(SwapError::SmokeFailed(format!(
            "{}: {}",
            failed.name, failed.observed
        )));
    }
    let generation = state.plugins.install(candidate, source);
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
