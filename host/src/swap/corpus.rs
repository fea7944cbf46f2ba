//! Replacing the served corpus without a restart (`POST /admin/corpus`, SIGHUP), the way a
//! plugin swaps: the candidate corpus is read, its sha256 checked against the pin, its index
//! built (or reused from the cache) and loaded into memory, and the serving plugin — the same
//! component and settings — smoke-checked over it on the conformance engine, all off the serving
//! path and without the install lock. Then one atomic install makes it the next corpus
//! generation. Requests admitted before keep the corpus they started with; the old corpus's
//! memory goes when the last of them ends. A refused candidate changes nothing.
//!
//! The sha256 of a corpus is that of its JSON Lines (decompressed, for a `.gz` file): what
//! `/readyz` and every answer name. The pin rule is the plugins' ([`super::Trigger`]).

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

use turnstile_corpus::{
    CorpusError, CorpusIndex, CorpusPool, read_corpus_from, read_corpus_within,
};

use super::reading::{open_and_read, too_slow};

use super::bounds::{MAX_CORPUS_CANDIDATES, MAX_RETIRED_CORPORA};
use super::error::{CorpusSwapError, SwapOutcome};
use super::hot_swap::{Checking, HotSwap, Swapped, Trigger};
use crate::conformance::smoke;
use crate::{Plugin, PluginRuntime, Sha256Hex, sha256_hex};

impl HotSwap {
    /// Loads the corpus at `path` (`None`: the embedded one), checks the serving plugin over it,
    /// then installs it as the next corpus generation. Blocks (reads, may build an index for
    /// minutes): call it from a blocking thread.
    pub fn swap_corpus(
        &self,
        path: Option<PathBuf>,
        trigger: Trigger,
    ) -> Result<Swapped, CorpusSwapError> {
        let started = Instant::now();
        let outcome = self.try_swap_corpus(path, trigger, started);
        self.observer.corpus_swap(
            outcome.as_ref().map(|swapped| swapped.outcome),
            started.elapsed(),
        );
        outcome
    }

    /// SIGHUP's corpus reload: the configured corpus (`--corpus`, or the embedded one), re-read
    /// under the current pin; unchanged when that is what serves.
    pub fn reload_corpus(&self) -> Result<Swapped, CorpusSwapError> {
        self.swap_corpus(self.configured.corpus.clone(), Trigger::Reload)
    }

    /// The sha256 every corpus install must match now, if the corpus is pinned.
    pub fn corpus_pin(&self) -> Option<Sha256Hex> {
        self.corpus_pin
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// Corpora swapped out that some request admitted before its swap still reads (0 once
    /// every such request has ended: their memory is freed).
    pub fn retired_corpora_in_memory(&self) -> usize {
        let mut retired = self.retired.lock().unwrap_or_else(|p| p.into_inner());
        retired.retain(|watch| watch.in_memory());
        retired.len()
    }

    fn try_swap_corpus(
        &self,
        path: Option<PathBuf>,
        trigger: Trigger,
        started: Instant,
    ) -> Result<Swapped, CorpusSwapError> {
        let Some(_checking) = Checking::enter_below(&self.corpus_checking, MAX_CORPUS_CANDIDATES)
        else {
            return Err(CorpusSwapError::Busy);
        };
        let previous = self.slot.current();
        let pinned_at_start = self.corpus_pin();
        let expected = trigger
            .expected(pinned_at_start.clone())
            .map_err(|pinned| CorpusSwapError::PinRequired { pinned })?;
        let refused = |e: CorpusError| match e {
            CorpusError::TooLarge { .. } => CorpusSwapError::TooLarge(e),
            CorpusError::NotACorpus { .. } | CorpusError::PluginGivenAsCorpus { .. } => {
                CorpusSwapError::Invalid(e)
            }
            other => CorpusSwapError::Unreadable(other),
        };
        // Read (and then hashed) only through what was opened under the roots.
        let (path, corpus) = match path {
            Some(path) => {
                let max = self.corpus_max_bytes;
                let read = open_and_read(&trigger, &self.roots, &path, move |opened| {
                    let corpus = read_corpus_from(opened.file, &opened.path, max);
                    (opened.path, corpus)
                })
                .map_err(CorpusSwapError::NotAllowed)?;
                match read {
                    Ok((path, corpus)) => (Some(path), corpus.map_err(refused)?),
                    Err(path) => {
                        return Err(CorpusSwapError::Unreadable(CorpusError::Read {
                            path,
                            source: too_slow(),
                        }));
                    }
                }
            }
            None => (
                None,
                read_corpus_within(None, self.corpus_max_bytes).map_err(refused)?,
            ),
        };
        let actual = sha256_hex(&corpus.jsonl);
        if let Some(expected) = &expected
            && actual != expected.as_str()
        {
            return Err(CorpusSwapError::Sha256Mismatch {
                expected: expected.clone(),
                actual,
            });
        }
        if actual == previous.corpus.index.sha256 {
            // The same documents: nothing to load (a reload of an unchanged file, or a swap to
            // the corpus being served). Under a pin, it was just checked against the pin.
            self.set_corpus_pin(expected);
            return Ok(Swapped {
                outcome: SwapOutcome::Unchanged,
                generation: previous.clone(),
                previous,
                elapsed: started.elapsed(),
                smoke: Vec::new(),
            });
        }
        // Memory: the serving corpus, at most MAX_RETIRED_CORPORA swapped out, and this one.
        let held = self.retired_corpora_in_memory();
        if held >= MAX_RETIRED_CORPORA {
            return Err(CorpusSwapError::MemoryHeld { held });
        }
        // Built with the serving corpus's model: a swap never changes the embedding model.
        let model = previous.corpus.index.model.clone();
        let index = CorpusIndex::open_or_build_hashed(&corpus, actual, &self.index_dir, &model)
            .map_err(|e| match e {
                CorpusError::BadDocument { .. } => CorpusSwapError::Invalid(e),
                other => CorpusSwapError::Index(other),
            })?;
        drop(corpus);
        let pool =
            CorpusPool::new(&index, self.idle_connections).map_err(CorpusSwapError::Index)?;
        // The serving plugin, the same bytes and settings, over the candidate corpus, on an
        // engine whose calls have a deadline (the serving engine's calls are never interrupted).
        let serving = &previous.plugin;
        let conformance =
            PluginRuntime::new(self.conformance.clone()).map_err(CorpusSwapError::Plugin)?;
        let trial = Plugin::from_bytes(
            &conformance,
            &previous.source,
            serving.bytes(),
            serving
                .provision()
                .with_corpus(pool.sibling(1).map_err(CorpusSwapError::Index)?),
        )
        .map_err(CorpusSwapError::Plugin)?;
        let smoke = smoke(&Arc::new(trial));
        if let Some(failed) = smoke.iter().find(|c| !c.passed) {
            let (check, observed) = (failed.name.clone(), failed.observed.clone());
            return Err(if observed.starts_with("timeout") {
                CorpusSwapError::Timeout { check, observed }
            } else {
                CorpusSwapError::SmokeFailed { check, observed }
            });
        }
        let candidate = serving.with_corpus(pool).map_err(CorpusSwapError::Plugin)?;
        // The install: one atomic step, only over the generation and under the pin this
        // candidate was checked against.
        let installing = self.slot.begin_swap();
        let now = self.slot.current();
        let mut pin = self.corpus_pin.lock().unwrap_or_else(|p| p.into_inner());
        if !now.same_as(&previous) || *pin != pinned_at_start {
            return Err(CorpusSwapError::Conflict {
                installed: now.number,
                corpus: now.corpus.number,
            });
        }
        let generation = self.slot.install_corpus(candidate, index, path);
        if let Some(new_pin) = expected {
            *pin = Some(new_pin);
        }
        drop(pin);
        drop(installing);
        self.retired
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(previous.plugin.corpus().watch());
        let elapsed = started.elapsed();
        tracing::info!(
            corpus_generation = generation.corpus.number,
            corpus = %generation.corpus.index.source,
            sha256 = %generation.corpus.index.sha256,
            documents = generation.corpus.index.documents,
            index = ?generation.corpus.index.origin,
            previous = previous.corpus.number,
            swap_ms = elapsed.as_secs_f64() * 1e3,
            "corpus swapped"
        );
        Ok(Swapped {
            outcome: SwapOutcome::Swapped,
            generation,
            previous,
            elapsed,
            smoke,
        })
    }

    fn set_corpus_pin(&self, pin: Option<Sha256Hex>) {
        if let Some(pin) = pin {
            *self.corpus_pin.lock().unwrap_or_else(|p| p.into_inner()) = Some(pin);
        }
    }
}
