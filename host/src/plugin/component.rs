//! A loaded plugin: compiled once, pre-linked (`InstancePre`), instantiated fresh for every call.

use std::path::PathBuf;
use std::sync::Arc;

use sha2::{Digest, Sha256};
use wasmtime::Store;

use super::PluginConfig;
use super::bindings::{RetrievalPluginPre, Source};
use super::host::{HostState, limiter};
use super::{ContractViolation, Incompatibility, PluginError, PluginRuntime};
use crate::corpus::CorpusPool;

/// The default retrieval plugin, built from `plugins/retrieval` by this crate's build script and
/// embedded in the binary.
static EMBEDDED_RETRIEVAL: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/retrieval.wasm"));

/// The component bytes of the embedded default plugin (what `PluginSource::Embedded` serves).
pub fn embedded_retrieval() -> &'static [u8] {
    EMBEDDED_RETRIEVAL
}

/// Longest title and snippet a plugin may return, in bytes (the contract's bounds).
const MAX_SOURCE_TITLE: usize = 512;
const MAX_SOURCE_SNIPPET: usize = 1024;

/// What one call used.
#[derive(Debug, Clone, Copy, Default)]
pub struct CallStats {
    /// The largest linear memory the call was granted, in bytes.
    pub peak_memory: usize,
    /// The largest linear memory the call asked for, granted or refused, in bytes: above the
    /// cap when the plugin tried to grow past it.
    pub requested_memory: usize,
}

/// Where a plugin's component comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PluginSource {
    /// The retrieval plugin embedded in the binary.
    Embedded,
    /// A `.wasm` component file chosen by the operator.
    File(PathBuf),
}

/// A compiled, linked plugin ready to serve calls from any thread.
pub struct Plugin {
    name: Arc<str>,
    sha256: String,
    pre: RetrievalPluginPre<HostState>,
    corpus: CorpusPool,
    config: Arc<PluginConfig>,
    memory_limit: usize,
}

impl std::fmt::Debug for Plugin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Plugin")
            .field("name", &self.name)
            .field("sha256", &self.sha256)
            .finish_non_exhaustive()
    }
}

impl Plugin {
    /// Reads, hashes, compiles (or loads from the precompiled cache) and links a component,
    /// checking that it fits the `retrieval-plugin` world.
    pub fn load(
        runtime: &PluginRuntime,
        source: &PluginSource,
        config: PluginConfig,
        corpus: CorpusPool,
    ) -> Result<Self, PluginError> {
        Self::load_inner(runtime, source, config, corpus, true)
    }

    fn load_inner(
        runtime: &PluginRuntime,
        source: &PluginSource,
        config: PluginConfig,
        corpus: CorpusPool,
        enforce_contract: bool,
    ) -> Result<Self, PluginError> {
        let (name, bytes) = match source {
            PluginSource::Embedded => ("retrieval".to_owned(), EMBEDDED_RETRIEVAL.to_vec()),
            PluginSource::File(path) => {
                let bytes = std::fs::read(path).map_err(|source| PluginError::Read {
                    path: path.clone(),
                    source,
                })?;
                let name = path
                    .file_stem()
                    .map(|s| s.to_string_lossy().into_owned())
                    .unwrap_or_else(|| "plugin".to_owned());
                (name, bytes)
            }
        };
        let sha256 = hex::encode(Sha256::digest(&bytes));
        let component = runtime.compile(&name, &bytes, &sha256)?;
        if enforce_contract {
            super::contract::check(&name, &component, &runtime.engine)?;
        }
        let incompatible = |e: wasmtime::Error| PluginError::Incompatible {
            name: name.clone(),
            reason: Incompatibility::Link(e),
        };
        let instance_pre = runtime
            .linker
            .instantiate_pre(&component)
            .map_err(incompatible)?;
        let pre = RetrievalPluginPre::new(instance_pre).map_err(incompatible)?;
        Ok(Self {
            name: name.into(),
            sha256,
            pre,
            corpus,
            config: Arc::new(config),
            memory_limit: runtime.options.memory_limit,
        })
    }

    /// The plugin's name (file stem, or `retrieval` for the embedded one).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// sha256 of the component's bytes, hex.
    pub fn sha256(&self) -> &str {
        &self.sha256
    }

    /// The corpus the plugin's sessions read.
    pub fn corpus(&self) -> &CorpusPool {
        &self.corpus
    }

    /// Runs one `retrieve` call on a fresh instance, blocking the current thread until the plugin
    /// returns. Must not run on an async runtime's worker thread (WASI's sync bindings block).
    ///
    /// Every corpus session the call opened is closed before this returns, whatever the outcome:
    /// they live in the call's store, which is dropped here.
    pub fn retrieve(
        &self,
        question: &str,
        limit: u32,
        request_id: u64,
    ) -> Result<Vec<Source>, PluginError> {
        self.retrieve_metered(question, limit, request_id).0
    }

    /// [`Plugin::retrieve`], also reporting what the call used.
    pub fn retrieve_metered(
        &self,
        question: &str,
        limit: u32,
        request_id: u64,
    ) -> (Result<Vec<Source>, PluginError>, CallStats) {
        let state = HostState::new(
            self.corpus.clone(),
            Arc::clone(&self.config),
            Arc::clone(&self.name),
            request_id,
            self.memory_limit,
        );
        let mut store = Store::new(self.pre.engine(), state);
        store.limiter(limiter);
        let outcome = self
            .pre
            .instantiate(&mut store)
            .and_then(|bindings| bindings.call_retrieve(&mut store, question, limit));
        self.log_output(&store, request_id);
        let stats = CallStats {
            peak_memory: store.data().limits.peak_memory,
            requested_memory: store.data().limits.requested_memory,
        };
        // A trap poisons the instance; the store (and with it every open session) goes now.
        drop(store);
        let result = match outcome {
            Ok(Ok(sources)) => check_sources(&sources, limit).map(|()| sources),
            Ok(Err(guest)) => Err(PluginError::Guest(guest)),
            Err(trap) => Err(PluginError::Trap(trap)),
        };
        (result, stats)
    }

    /// The per-instance memory cap, in bytes.
    pub fn memory_limit(&self) -> usize {
        self.memory_limit
    }

    fn log_output(&self, store: &Store<HostState>, request_id: u64) {
        let state = store.data();
        for (stream, pipe) in [("stdout", &state.stdout), ("stderr", &state.stderr)] {
            let bytes = pipe.contents();
            if !bytes.is_empty() {
                tracing::info!(
                    plugin = &*self.name,
                    request_id,
                    stream,
                    "{}",
                    String::from_utf8_lossy(&bytes).trim_end()
                );
            }
        }
    }
}

/// The host checks what the contract promises clients, whatever the plugin did.
fn check_sources(sources: &[Source], limit: u32) -> Result<(), PluginError> {
    let violation = |v| Err(PluginError::Contract(v));
    if sources.len() > limit as usize {
        return violation(ContractViolation::TooManySources {
            returned: sources.len(),
            limit,
        });
    }
    for s in sources {
        if !s.score.is_finite() {
            return violation(ContractViolation::NonFiniteScore {
                id: s.id.clone(),
                score: s.score,
            });
        }
        for (field, text, max) in [
            ("title", &s.title, MAX_SOURCE_TITLE),
            ("snippet", &s.snippet, MAX_SOURCE_SNIPPET),
        ] {
            if text.len() > max {
                return violation(ContractViolation::FieldTooLong {
                    id: s.id.clone(),
                    field,
                    bytes: text.len(),
                    max,
                });
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::corpus::{CorpusBytes, CorpusIndex};
    use crate::plugin::RuntimeOptions;

    /// A pool over a one-document corpus in its own temporary directory.
    fn one_document_pool() -> (CorpusPool, tempfile::TempDir) {
        let dir = tempfile::tempdir().unwrap();
        let corpus = CorpusBytes {
            name: "t".into(),
            jsonl: br#"{"id":"a","kind":"module","title":"a","text":"a"}"#.to_vec(),
        };
        let index = CorpusIndex::open_or_build(&corpus, dir.path()).unwrap();
        (CorpusPool::new(&index, 1).unwrap(), dir)
    }

    /// A runtime with the default 64 MiB memory cap and no precompiled cache.
    fn runtime(max_instances: u32, pooling: bool) -> PluginRuntime {
        PluginRuntime::new(RuntimeOptions {
            memory_limit: 64 << 20,
            max_instances,
            cache_dir: None,
            pooling,
        })
        .unwrap()
    }

    /// The second wall: even a component linked past the contract check (which refuses its
    /// filesystem and socket imports) gets errors, never data, because WASI grants nothing.
    #[test]
    fn wasi_grants_no_files_and_no_sockets() {
        let (pool, dir) = one_document_pool();
        let runtime = runtime(4, false);
        let source = PluginSource::File(turnstile_fixtures::ESCAPE.into());
        assert!(Plugin::load(&runtime, &source, PluginConfig::new(), pool.clone()).is_err());
        for attempt in ["read-file", "list-dir", "socket"] {
            let config = PluginConfig::from([("attempt".to_owned(), attempt.to_owned())]);
            let plugin =
                Plugin::load_inner(&runtime, &source, config, pool.clone(), false).unwrap();
            match plugin.retrieve("x", 1, 1) {
                Err(PluginError::Guest(super::super::RetrieveError::Internal(m))) => {
                    assert!(m.starts_with(&format!("{attempt} refused")), "{m}");
                }
                other => panic!("{attempt}: expected a refusal, got {other:?}"),
            }
        }
        dir.close().unwrap();
    }

    /// A pooled slot is reused call after call (one slot here), with its dirtied pages reset in
    /// place where the kernel allows: each call must still start from the component's own
    /// memory image, never a previous call's data.
    #[test]
    fn a_reused_pool_slot_starts_from_a_fresh_memory_image() {
        let (pool, dir) = one_document_pool();
        let runtime = runtime(1, true);
        if runtime.allocator() != crate::plugin::Allocator::Pooling {
            eprintln!("pooling allocator unavailable here: this checks on-demand instances only");
        }
        let source = PluginSource::File(turnstile_fixtures::HOSTILE.into());
        let config = PluginConfig::from([("attempt".to_owned(), "remember".to_owned())]);
        let plugin = Plugin::load_inner(&runtime, &source, config, pool, false).unwrap();
        for call in 1..=5 {
            match plugin.retrieve("x", 1, call) {
                Err(PluginError::Guest(super::super::RetrieveError::Internal(m))) => {
                    assert_eq!(m, "remember refused: memory started fresh", "call {call}");
                }
                other => panic!("call {call}: expected fresh memory, got {other:?}"),
            }
        }
        dir.close().unwrap();
    }
}
