//! A loaded plugin: compiled once, pre-linked (`InstancePre`), instantiated fresh for every call.

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use sha2::{Digest, Sha256};
use wasmtime::Store;

use super::PluginConfig;
use super::bindings::{RetrievalPluginPre, Source};
use super::host::{HostState, limiter};
use super::output::{MAX_CAPTURED_OUTPUT, MAX_LOG_BYTES, MAX_LOG_CALLS, MAX_LOGGED_TEXT, sanitize};
use super::{ContractViolation, Incompatibility, PluginError, PluginRuntime};
use crate::corpus::{CorpusPool, SessionLimits};
use crate::metrics::HostCallMetrics;

/// The default retrieval plugin, built from `plugins/retrieval-hybrid` by this crate's build
/// script and embedded in the binary.
static EMBEDDED_RETRIEVAL: &[u8] =
    include_bytes!(concat!(env!("OUT_DIR"), "/retrieval-hybrid.wasm"));
/// The lexical (bm25-only) plugin, built from `plugins/retrieval`: what the default was before
/// contract 0.1.2, kept in the binary so the eval and the tests can always compare the two
/// (operators get it as `target/plugins/retrieval.wasm` from `cargo xtask plugins`).
static EMBEDDED_LEXICAL: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/retrieval.wasm"));

/// The component bytes of the embedded default plugin (what `PluginSource::Embedded` serves).
pub fn embedded_retrieval() -> &'static [u8] {
    EMBEDDED_RETRIEVAL
}

/// The component bytes of the embedded lexical plugin.
pub fn embedded_lexical() -> &'static [u8] {
    EMBEDDED_LEXICAL
}

/// Conformance calls abandoned past their deadline (blocked in a host call) that may still be
/// running; past this, further bounded calls are refused at once. Bounds the threads and memory
/// a series of sleeping candidates can hold.
pub const MAX_ABANDONED_CALLS: usize = 4;
/// After the deadline's epoch tick, how long a running guest gets to reach its trap.
const ABANDON_GRACE: Duration = Duration::from_millis(200);
static ABANDONED_CALLS: AtomicUsize = AtomicUsize::new(0);

/// Longest title and snippet a plugin may return, in bytes (the contract's bounds).
const MAX_SOURCE_TITLE: usize = 512;
const MAX_SOURCE_SNIPPET: usize = 1024;

/// What one call used.
#[derive(Debug, Clone, Copy, Default)]
pub struct CallStats {
    /// Creating the call's instance (its store, memory image and imports).
    pub instantiate: Duration,
    /// The largest linear memory the call was granted, in bytes.
    pub peak_memory: usize,
    /// The largest linear memory the call asked for, granted or refused, in bytes: above the
    /// cap when the plugin tried to grow past it.
    pub requested_memory: usize,
    /// The most elements the call asked one of its tables to hold, granted or refused.
    pub requested_table_elements: usize,
    /// Bytes of stdout and stderr dropped past [`MAX_CAPTURED_OUTPUT`].
    pub output_dropped_bytes: u64,
    /// `log.write` messages dropped past the per-call bounds.
    pub log_dropped_messages: u32,
}

/// Largest plugin file read, in bytes (a component is a few hundred KiB to a few MiB): bounds
/// what a swap reads and compiles.
pub const MAX_PLUGIN_BYTES: u64 = 64 << 20;

/// Where a plugin's component comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PluginSource {
    /// The retrieval plugin embedded in the binary.
    Embedded,
    /// A `.wasm` component file chosen by the operator.
    File(PathBuf),
}

impl PluginSource {
    /// The plugin's name: its file stem, or `retrieval-hybrid` for the embedded one.
    pub fn name(&self) -> String {
        match self {
            Self::Embedded => "retrieval-hybrid".to_owned(),
            Self::File(path) => path
                .file_stem()
                .map(|s| s.to_string_lossy().into_owned())
                .unwrap_or_else(|| "plugin".to_owned()),
        }
    }

    /// The component's bytes. A file must be a regular file of at most [`MAX_PLUGIN_BYTES`]:
    /// a device (`/dev/zero`), a FIFO or a directory is refused before anything is read.
    pub fn read(&self) -> Result<std::borrow::Cow<'static, [u8]>, PluginError> {
        let path = match self {
            Self::Embedded => return Ok(std::borrow::Cow::Borrowed(EMBEDDED_RETRIEVAL)),
            Self::File(path) => path,
        };
        let refuse = |source: std::io::Error| PluginError::Read {
            path: path.clone(),
            source,
        };
        let not_regular = || {
            refuse(std::io::Error::new(
                std::io::ErrorKind::InvalidInput,
                "not a regular file",
            ))
        };
        // Look before opening (opening a FIFO would block until a writer came), open without
        // blocking, and look again at what was opened (the path may have changed meanwhile).
        if !std::fs::metadata(path).map_err(refuse)?.is_file() {
            return Err(not_regular());
        }
        let file = {
            use std::os::unix::fs::OpenOptionsExt;
            std::fs::OpenOptions::new()
                .read(true)
                .custom_flags(rustix::fs::OFlags::NONBLOCK.bits() as i32)
                .open(path)
                .map_err(refuse)?
        };
        let metadata = file.metadata().map_err(refuse)?;
        if !metadata.is_file() {
            return Err(not_regular());
        }
        if metadata.len() > MAX_PLUGIN_BYTES {
            return Err(refuse(std::io::Error::new(
                std::io::ErrorKind::InvalidInput,
                format!(
                    "{} bytes; at most {MAX_PLUGIN_BYTES} are read",
                    metadata.len()
                ),
            )));
        }
        let mut bytes = Vec::with_capacity(metadata.len() as usize);
        // `take`: the file may grow between the size check and the read.
        std::io::Read::read_to_end(
            &mut std::io::Read::take(file, MAX_PLUGIN_BYTES + 1),
            &mut bytes,
        )
        .map_err(refuse)?;
        if bytes.len() as u64 > MAX_PLUGIN_BYTES {
            return Err(refuse(std::io::Error::new(
                std::io::ErrorKind::InvalidInput,
                format!("larger than {MAX_PLUGIN_BYTES} bytes"),
            )));
        }
        Ok(std::borrow::Cow::Owned(bytes))
    }
}

/// sha256 of `bytes`, lowercase hex.
pub fn sha256_hex(bytes: &[u8]) -> String {
    hex::encode(Sha256::digest(bytes))
}

/// A compiled, linked plugin ready to serve calls from any thread.
pub struct Plugin {
    name: Arc<str>,
    sha256: String,
    pre: RetrievalPluginPre<HostState>,
    corpus: CorpusPool,
    config: Arc<PluginConfig>,
    memory_limit: usize,
    call_deadline: Option<Duration>,
    host_metrics: Option<Arc<HostCallMetrics>>,
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
        let bytes = source.read()?;
        Self::compile_and_link(runtime, source, &bytes, config, corpus, enforce_contract)
    }

    /// Like [`Plugin::load`], from bytes already read from `source` (a swap hashes them first,
    /// then loads the same bytes on two runtimes).
    pub fn from_bytes(
        runtime: &PluginRuntime,
        source: &PluginSource,
        bytes: &[u8],
        config: PluginConfig,
        corpus: CorpusPool,
    ) -> Result<Self, PluginError> {
        Self::compile_and_link(runtime, source, bytes, config, corpus, true)
    }

    fn compile_and_link(
        runtime: &PluginRuntime,
        source: &PluginSource,
        bytes: &[u8],
        config: PluginConfig,
        corpus: CorpusPool,
        enforce_contract: bool,
    ) -> Result<Self, PluginError> {
        let name = source.name();
        let sha256 = sha256_hex(bytes);
        let component = runtime.compile(&name, bytes, &sha256)?;
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
            name: name.as_str().into(),
            sha256,
            pre,
            corpus,
            config: Arc::new(config),
            memory_limit: runtime.options.memory_limit,
            call_deadline: runtime.options.call_deadline,
            host_metrics: runtime.options.host_metrics.clone(),
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
            self.host_metrics.clone(),
        );
        let mut store = Store::new(self.pre.engine(), state);
        store.limiter(limiter);
        if self.call_deadline.is_some() {
            // Conformance engine only: the call traps at the next epoch tick, which
            // `retrieve_bounded` makes when the deadline passes.
            store.set_epoch_deadline(1);
            store.epoch_deadline_trap();
        }
        let started = std::time::Instant::now();
        let instance = self.pre.instantiate(&mut store);
        let instantiate = started.elapsed();
        let outcome =
            instance.and_then(|bindings| bindings.call_retrieve(&mut store, question, limit));
        let (output_dropped_bytes, log_dropped_messages) = self.log_output(&mut store, request_id);
        let limits = &store.data().limits;
        let stats = CallStats {
            instantiate,
            peak_memory: limits.peak_memory,
            requested_memory: limits.requested_memory,
            requested_table_elements: limits.requested_table_elements,
            output_dropped_bytes,
            log_dropped_messages,
        };
        // A trap poisons the instance; the store (and with it every open session) goes now.
        drop(store);
        let result = match outcome {
            Ok(Ok(sources)) => check_sources(&sources, limit, &self.corpus)
                .map(|()| sources)
                .map_err(PluginError::Contract),
            Ok(Err(guest)) => Err(PluginError::Guest(guest)),
            Err(trap) => Err(PluginError::Trap(trap)),
        };
        (result, stats)
    }

    /// The per-instance memory cap, in bytes.
    pub fn memory_limit(&self) -> usize {
        self.memory_limit
    }

    /// [`Plugin::retrieve_metered`] under the runtime's call deadline (a plugin of a conformance
    /// runtime; without a deadline it is simply `retrieve_metered`). The call runs on a thread
    /// of its own; at the deadline a running guest is stopped at its next epoch check, and one
    /// blocked in a host call (a sleep) is abandoned: it ends when that host call returns. At
    /// most [`MAX_ABANDONED_CALLS`] abandoned calls may still be running; past that, a bounded
    /// call is refused at once.
    pub fn retrieve_bounded(
        self: &Arc<Self>,
        question: &str,
        limit: u32,
    ) -> (Result<Vec<Source>, PluginError>, CallStats) {
        let Some(deadline) = self.call_deadline else {
            return self.retrieve_metered(question, limit, 0);
        };
        if ABANDONED_CALLS.load(Ordering::SeqCst) >= MAX_ABANDONED_CALLS {
            return (
                Err(PluginError::TimedOut {
                    after: Duration::ZERO,
                    abandoned: MAX_ABANDONED_CALLS,
                }),
                CallStats::default(),
            );
        }
        let (done, outcome) = std::sync::mpsc::sync_channel(1);
        let (plugin, question) = (Arc::clone(self), question.to_owned());
        let spawned = std::thread::Builder::new()
            .name("turnstile-conformance".into())
            .spawn(move || {
                let _ = done.send(plugin.retrieve_metered(&question, limit, 0));
            });
        if let Err(e) = spawned {
            return (
                Err(PluginError::Engine(wasmtime::Error::msg(format!(
                    "cannot start a conformance call: {e}"
                )))),
                CallStats::default(),
            );
        }
        if let Ok(result) = outcome.recv_timeout(deadline) {
            return result;
        }
        // Past the deadline: stop a guest that is running wasm, and give it a moment to trap.
        self.pre.engine().increment_epoch();
        if outcome.recv_timeout(ABANDON_GRACE).is_err() {
            // Blocked in a host call: abandon it, counting it until it really ends.
            ABANDONED_CALLS.fetch_add(1, Ordering::SeqCst);
            std::thread::spawn(move || {
                let _ = outcome.recv();
                ABANDONED_CALLS.fetch_sub(1, Ordering::SeqCst);
            });
        }
        (
            Err(PluginError::TimedOut {
                after: deadline,
                abandoned: ABANDONED_CALLS.load(Ordering::SeqCst),
            }),
            CallStats::default(),
        )
    }

    /// Puts what the call wrote to stdout and stderr into the log (escaped: one line per
    /// stream), and says what was cut past the bounds. Returns the bytes and messages dropped.
    fn log_output(&self, store: &mut Store<HostState>, request_id: u64) -> (u64, u32) {
        let plugin = &*self.name;
        let state = store.data_mut();
        let mut dropped_bytes = 0;
        for (stream, pipe) in [("stdout", &state.stdout), ("stderr", &state.stderr)] {
            let (kept, dropped) = pipe.take();
            if !kept.is_empty() {
                let text = String::from_utf8_lossy(&kept);
                let text = sanitize(text.trim_end(), MAX_CAPTURED_OUTPUT);
                tracing::info!(plugin, request_id, stream, "{text}");
            }
            if dropped > 0 {
                tracing::warn!(
                    plugin,
                    request_id,
                    stream,
                    dropped_bytes = dropped,
                    "plugin output cut at {MAX_CAPTURED_OUTPUT} bytes"
                );
            }
            dropped_bytes += dropped;
        }
        let budget = &state.log_budget;
        if budget.dropped_calls > 0 {
            tracing::warn!(
                plugin,
                request_id,
                dropped_messages = budget.dropped_calls,
                dropped_bytes = budget.dropped_bytes,
                "plugin log cut at {MAX_LOG_CALLS} messages / {MAX_LOG_BYTES} bytes per call"
            );
        }
        (dropped_bytes, budget.dropped_calls)
    }
}

/// The host checks what the contract promises clients, whatever the plugin did — the same rules
/// when serving as in `turnstile check`, so a plugin cannot serve what `check` would refuse:
/// at most `limit` sources, ids of the corpus, finite best-first scores, titles and snippets
/// within their bounds. Ids in the errors are cut and escaped: they go into log lines.
pub(super) fn check_sources(
    sources: &[Source],
    limit: u32,
    corpus: &CorpusPool,
) -> Result<(), ContractViolation> {
    let logged = |id: &str| sanitize(id, MAX_LOGGED_TEXT);
    if sources.len() > limit as usize {
        return Err(ContractViolation::TooManySources {
            returned: sources.len(),
            limit,
        });
    }
    for s in sources {
        if s.id.is_empty() || s.id.len() > SessionLimits::MAX_ID_BYTES {
            return Err(ContractViolation::BadId {
                bytes: s.id.len(),
                max: SessionLimits::MAX_ID_BYTES,
            });
        }
        if !s.score.is_finite() {
            return Err(ContractViolation::NonFiniteScore {
                id: logged(&s.id),
                score: s.score,
            });
        }
        for (field, text, max) in [
            ("title", &s.title, MAX_SOURCE_TITLE),
            ("snippet", &s.snippet, MAX_SOURCE_SNIPPET),
        ] {
            if text.len() > max {
                return Err(ContractViolation::FieldTooLong {
                    id: logged(&s.id),
                    field,
                    bytes: text.len(),
                    max,
                });
            }
        }
    }
    if let Some(w) = sources.windows(2).find(|w| w[1].score > w[0].score) {
        return Err(ContractViolation::NotBestFirst {
            before: w[0].score,
            after: w[1].score,
        });
    }
    if sources.is_empty() {
        return Ok(());
    }
    match corpus.first_unknown(sources.iter().map(|s| s.id.as_str())) {
        Ok(Some(id)) => Err(ContractViolation::UnknownId { id: logged(id) }),
        Ok(None) => Ok(()),
        Err(e) => Err(ContractViolation::Corpus(e.to_string())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::plugin::RuntimeOptions;

    /// A pool over a one-document corpus in its own temporary directory.
    fn one_document_pool() -> (CorpusPool, tempfile::TempDir) {
        crate::corpus::testing::pool_of(br#"{"id":"a","kind":"module","title":"a","text":"a"}"#, 1)
    }

    /// A runtime with the default 64 MiB memory cap and no precompiled cache.
    fn runtime(max_instances: u32, pooling: bool) -> PluginRuntime {
        PluginRuntime::new(RuntimeOptions {
            memory_limit: 64 << 20,
            max_instances,
            cache_dir: None,
            pooling,
            call_deadline: None,
            host_metrics: None,
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
