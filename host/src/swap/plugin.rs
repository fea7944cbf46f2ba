//! Replacing the served plugin: a candidate is read, hashed against the pin, compiled, checked
//! against the contract and smoke-checked on the conformance engine, without the install lock;
//! then one atomic install over the generation it was checked against.

use std::sync::Arc;
use std::time::Instant;

use super::error::{SwapError, SwapOutcome};
use super::hot_swap::{Checking, HotSwap, SwapSettings, Swapped, Trigger};
use super::reading::{open_and_read, too_slow};
use crate::conformance::smoke;
use crate::source::read_opened;
use crate::{Plugin, PluginError, PluginGiven, PluginRuntime, PluginSource, Provision};

impl HotSwap {
    /// Loads and checks the candidate at `source`, then installs it. Blocks (compiles): call it
    /// from a blocking thread.
    pub fn swap(
        &self,
        source: PluginSource,
        trigger: Trigger,
        settings: SwapSettings,
    ) -> Result<Swapped, SwapError> {
        let started = Instant::now();
        let outcome = self.try_swap(source, trigger, settings, started);
        self.observer
            .plugin_swap(outcome.as_ref().map(|s| s.outcome), started.elapsed());
        outcome
    }

    /// SIGHUP's plugin reload: the configured plugin (`--plugin`, or the embedded one) with the
    /// operator's settings and grants, re-read under the current pin; unchanged when that is
    /// what serves.
    pub fn reload_plugin(&self) -> Result<Swapped, SwapError> {
        self.swap(
            self.configured.plugin.clone(),
            Trigger::Reload,
            SwapSettings::default(),
        )
    }

    fn try_swap(
        &self,
        source: PluginSource,
        trigger: Trigger,
        settings: SwapSettings,
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
        let defaults = &self.defaults;
        // A swap may narrow what a capability gave, never widen it: every origin it names must
        // be within one the operator granted (the credentials and secrets go nowhere else).
        let capabilities = defaults
            .capabilities
            .narrowed(&settings.capabilities)
            .map_err(SwapError::GrantWidened)?;
        let config = settings.config.unwrap_or_else(|| defaults.config.clone());
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
        // Read (and then hashed) only through what was opened under the roots.
        let (source, bytes) = match source {
            PluginSource::File(path) => {
                let read = open_and_read(&trigger, &self.roots, &path, |opened| {
                    let bytes = read_opened(&opened.path, opened.file);
                    (opened.path, bytes)
                })
                .map_err(SwapError::NotAllowed)?;
                match read {
                    Ok((path, bytes)) => (PluginSource::File(path), bytes.map_err(refused)?),
                    Err(path) => {
                        return Err(refused(PluginError::Read {
                            path,
                            error: too_slow(),
                        }));
                    }
                }
            }
            embedded => {
                let bytes = embedded.read().map_err(refused)?.into_owned();
                (embedded, bytes)
            }
        };
        let actual = crate::sha256_hex(&bytes);
        if let Some(expected) = expected_sha256
            && actual != expected.as_str()
        {
            return Err(SwapError::Sha256Mismatch {
                expected: expected.clone(),
                actual,
            });
        }
        let serving = previous.plugin.provision();
        if actual == previous.plugin.sha256()
            && *serving.config == config
            && serving.capabilities == capabilities
        {
            // What serves already: no generation is made (a reload of an unchanged file, or a
            // swap to the plugin serving). Under a pin, it was just checked against the pin.
            if let Some(new_pin) = expected {
                *self.pin.lock().unwrap_or_else(|p| p.into_inner()) = Some(new_pin);
            }
            return Ok(Swapped {
                outcome: SwapOutcome::Unchanged,
                generation: previous.clone(),
                previous,
                elapsed: started.elapsed(),
                smoke: Vec::new(),
            });
        }
        // The smoke checks run on the conformance runtime, then the same bytes are loaded for
        // serving (the two engines compile differently: only one has epoch interruption).
        let conformance = PluginRuntime::new(self.conformance.clone()).map_err(refused)?;
        let given = Provision::of(
            pool,
            &PluginGiven {
                config,
                capabilities,
                ..defaults.clone()
            },
        );
        let trial =
            Plugin::from_bytes(&conformance, &source, &bytes, given.clone()).map_err(refused)?;
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
            Plugin::from_bytes(&self.runtime, &source, &bytes, given).map_err(refused)?;
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
            outcome: SwapOutcome::Swapped,
            generation,
            previous,
            elapsed,
            smoke,
        })
    }
}
