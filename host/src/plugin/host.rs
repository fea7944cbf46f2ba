//! What a plugin instance can reach: its corpus sessions, its operator-given config, the log —
//! and a WASI context that grants nothing (no files, sockets, environment or arguments).

use std::sync::Arc;
use std::time::Instant;

use wasmtime::component::{Resource, ResourceTable};
use wasmtime::{ResourceLimiter, StoreLimits};
use wasmtime_wasi::{WasiCtx, WasiCtxView, WasiView};

use super::PluginConfig;
use super::bindings::turnstile::retrieval::{config, corpus, embeddings, log};
use super::output::{CapturedOutput, LogBudget, MAX_LOG_MESSAGE, sanitize};
use crate::corpus::{CorpusError, CorpusPool, CorpusSession};
use crate::metrics::{HostCallKind, HostCallMetrics, HostCallOutcome};

/// At most this many corpus sessions may be open at once within one call; it bounds how many
/// pooled connections a single (possibly hostile) plugin call can hold.
pub const MAX_OPEN_SESSIONS: usize = 4;
/// Core instances one plugin instance may create (a Rust component needs a handful).
pub const MAX_INSTANCES: usize = 16;
/// Tables one plugin instance may create, and elements each may hold: together they bound the
/// host memory a component's tables can take (with on-demand allocation a table's growth is host
/// heap, outside the linear-memory cap).
pub const MAX_TABLES: usize = 4;
/// See [`MAX_TABLES`].
pub const MAX_TABLE_ELEMENTS: usize = 20_000;
/// Linear memories one plugin instance may create (a Rust component has one).
pub const MAX_MEMORIES: usize = 2;
/// Most texts one `embeddings.embed` call takes.
pub const MAX_EMBED_TEXTS: usize = 16;
/// Longest text `embeddings.embed` takes, in bytes.
pub const MAX_EMBED_TEXT_BYTES: usize = 4096;

/// Entries of one call's resource table (sessions, WASI streams and pollables).
pub const MAX_RESOURCES: usize = 1024;

/// The data of one call's `Store`. Dropping it (with the store) closes every session still open.
pub struct HostState {
    wasi: WasiCtx,
    table: ResourceTable,
    pub(super) limits: MeteredLimits,
    corpus: CorpusPool,
    config: Arc<PluginConfig>,
    plugin: Arc<str>,
    request_id: u64,
    open_sessions: usize,
    pub(super) stdout: CapturedOutput,
    pub(super) stderr: CapturedOutput,
    pub(super) log_budget: LogBudget,
    metrics: Option<Arc<HostCallMetrics>>,
}

impl HostState {
    pub(super) fn new(
        corpus: CorpusPool,
        config: Arc<PluginConfig>,
        plugin: Arc<str>,
        request_id: u64,
        memory_limit: usize,
        metrics: Option<Arc<HostCallMetrics>>,
    ) -> Self {
        let stdout = CapturedOutput::default();
        let stderr = CapturedOutput::default();
        // Deny by default: no preopened directories, no environment, no arguments, no stdin;
        // sockets and name lookup are switched off (not merely given an empty allow-list).
        let wasi = WasiCtx::builder()
            .stdout(stdout.clone())
            .stderr(stderr.clone())
            .allow_tcp(false)
            .allow_udp(false)
            .allow_ip_name_lookup(false)
            .build();
        let limits = MeteredLimits {
            inner: wasmtime::StoreLimitsBuilder::new()
                .memory_size(memory_limit)
                .table_elements(MAX_TABLE_ELEMENTS)
                .instances(MAX_INSTANCES)
                .tables(MAX_TABLES)
                .memories(MAX_MEMORIES)
                .trap_on_grow_failure(true)
                .build(),
            peak_memory: 0,
            requested_memory: 0,
            requested_table_elements: 0,
        };
        let mut table = ResourceTable::new();
        table.set_max_capacity(MAX_RESOURCES);
        Self {
            wasi,
            table,
            limits,
            corpus,
            config,
            plugin,
            request_id,
            open_sessions: 0,
            stdout,
            stderr,
            log_budget: LogBudget::default(),
            metrics,
        }
    }
}

impl WasiView for HostState {
    fn ctx(&mut self) -> WasiCtxView<'_> {
        WasiCtxView {
            ctx: &mut self.wasi,
            table: &mut self.table,
        }
    }
}

/// The store's limiter is the `StoreLimits` inside the state.
pub(super) fn limiter(state: &mut HostState) -> &mut dyn ResourceLimiter {
    &mut state.limits
}

/// `StoreLimits` (the memory and table caps; growth past them traps) that also records the
/// largest memory the call was granted and the largest memory and table it asked for, for
/// `turnstile check` and the logs.
pub(super) struct MeteredLimits {
    inner: StoreLimits,
    pub(super) peak_memory: usize,
    pub(super) requested_memory: usize,
    pub(super) requested_table_elements: usize,
}

impl ResourceLimiter for MeteredLimits {
    fn memory_growing(
        &mut self,
        current: usize,
        desired: usize,
        maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        self.requested_memory = self.requested_memory.max(desired);
        let granted = self.inner.memory_growing(current, desired, maximum)?;
        if granted {
            self.peak_memory = self.peak_memory.max(desired);
        }
        Ok(granted)
    }

    fn table_growing(
        &mut self,
        current: usize,
        desired: usize,
        maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        self.requested_table_elements = self.requested_table_elements.max(desired);
        self.inner.table_growing(current, desired, maximum)
    }

    fn memory_grow_failed(&mut self, error: wasmtime::Error) -> wasmtime::Result<()> {
        self.inner.memory_grow_failed(error)
    }

    fn table_grow_failed(&mut self, error: wasmtime::Error) -> wasmtime::Result<()> {
        self.inner.table_grow_failed(error)
    }

    fn instances(&self) -> usize {
        self.inner.instances()
    }

    fn tables(&self) -> usize {
        self.inner.tables()
    }

    fn memories(&self) -> usize {
        self.inner.memories()
    }
}

fn to_wit(error: CorpusError) -> corpus::CorpusError {
    match error {
        CorpusError::BadExpression(m) => corpus::CorpusError::BadExpression(m),
        CorpusError::InvalidArgument(m) => corpus::CorpusError::InvalidArgument(m),
        // The plugin's expression was too costly: its own doing, reported to it as such.
        timed_out @ CorpusError::TimedOut { .. } => {
            tracing::warn!(error = %timed_out, "corpus query stopped");
            corpus::CorpusError::InvalidArgument(timed_out.to_string())
        }
        other => {
            tracing::error!(error = %other, "corpus query failed");
            corpus::CorpusError::Internal("corpus query failed".into())
        }
    }
}

impl HostState {
    /// Ends one corpus host call begun at `started`: counts and times it (when measured), and
    /// turns the corpus's typed error into the contract's.
    fn finish<T>(
        &self,
        kind: HostCallKind,
        started: Instant,
        result: Result<T, CorpusError>,
    ) -> Result<T, corpus::CorpusError> {
        if let Some(metrics) = &self.metrics {
            let outcome = match &result {
                Ok(_) => HostCallOutcome::Ok,
                Err(CorpusError::TimedOut { .. }) => HostCallOutcome::Timeout,
                Err(_) => HostCallOutcome::Error,
            };
            metrics.observe(kind, outcome, started.elapsed());
        }
        result.map_err(to_wit)
    }
}

impl corpus::Host for HostState {}

impl corpus::HostSession for HostState {
    fn open(&mut self) -> wasmtime::Result<Result<Resource<CorpusSession>, corpus::CorpusError>> {
        if self.open_sessions >= MAX_OPEN_SESSIONS {
            if let Some(metrics) = &self.metrics {
                metrics.observe(
                    HostCallKind::Open,
                    HostCallOutcome::Error,
                    Default::default(),
                );
            }
            return Ok(Err(corpus::CorpusError::TooManySessions));
        }
        let started = Instant::now();
        let session = match self.finish(HostCallKind::Open, started, self.corpus.session()) {
            Ok(s) => s,
            Err(e) => return Ok(Err(e)),
        };
        let handle = self.table.push(session)?;
        self.open_sessions += 1;
        Ok(Ok(handle))
    }

    fn search(
        &mut self,
        session: Resource<CorpusSession>,
        expression: String,
        limit: u32,
    ) -> wasmtime::Result<Result<Vec<corpus::Candidate>, corpus::CorpusError>> {
        let started = Instant::now();
        let found = self.table.get(&session)?.search(&expression, limit);
        Ok(self
            .finish(HostCallKind::Search, started, found)
            .map(|hits| {
                hits.into_iter()
                    .map(|c| corpus::Candidate {
                        id: c.id,
                        title: c.title,
                        snippet: c.snippet,
                        rank: c.rank,
                    })
                    .collect()
            }))
    }

    fn rank(
        &mut self,
        session: Resource<CorpusSession>,
        expression: String,
        limit: u32,
    ) -> wasmtime::Result<Result<Vec<corpus::Ranked>, corpus::CorpusError>> {
        let started = Instant::now();
        let found = self.table.get(&session)?.rank(&expression, limit);
        Ok(self.finish(HostCallKind::Rank, started, found).map(|hits| {
            hits.into_iter()
                .map(|r| corpus::Ranked {
                    id: r.id,
                    title: r.title,
                    rank: r.rank,
                    doc: r.doc,
                })
                .collect()
        }))
    }

    fn snippet(
        &mut self,
        session: Resource<CorpusSession>,
        expression: String,
        doc: u64,
    ) -> wasmtime::Result<Result<Option<String>, corpus::CorpusError>> {
        let started = Instant::now();
        let found = self.table.get(&session)?.snippet(&expression, doc);
        Ok(self.finish(HostCallKind::Snippet, started, found))
    }

    fn nearest(
        &mut self,
        session: Resource<CorpusSession>,
        vector: Vec<f32>,
        limit: u32,
    ) -> wasmtime::Result<Result<Vec<corpus::Neighbour>, corpus::CorpusError>> {
        let started = Instant::now();
        let found = self.table.get(&session)?.nearest(&vector, limit);
        Ok(self
            .finish(HostCallKind::Nearest, started, found)
            .map(|near| {
                near.into_iter()
                    .map(|n| corpus::Neighbour {
                        id: n.id,
                        title: n.title,
                        similarity: n.similarity,
                        doc: n.doc,
                    })
                    .collect()
            }))
    }

    fn get(
        &mut self,
        session: Resource<CorpusSession>,
        id: String,
    ) -> wasmtime::Result<Result<Option<corpus::Document>, corpus::CorpusError>> {
        let started = Instant::now();
        let found = self.table.get(&session)?.get(&id);
        Ok(self.finish(HostCallKind::Get, started, found).map(|doc| {
            doc.map(|d| corpus::Document {
                id: d.id,
                kind: d.kind,
                title: d.title,
                text: d.text,
            })
        }))
    }

    fn count(
        &mut self,
        session: Resource<CorpusSession>,
    ) -> wasmtime::Result<Result<u64, corpus::CorpusError>> {
        let started = Instant::now();
        let count = self.table.get(&session)?.count();
        Ok(self.finish(HostCallKind::Count, started, Ok(count)))
    }

    fn drop(&mut self, session: Resource<CorpusSession>) -> wasmtime::Result<()> {
        // Deleting the entry drops the session, which returns its connection to the pool.
        self.table.delete(session)?;
        self.open_sessions -= 1;
        Ok(())
    }
}

impl embeddings::Host for HostState {
    fn dimensions(&mut self) -> wasmtime::Result<u32> {
        Ok(u32::try_from(self.corpus.dims()).unwrap_or(u32::MAX))
    }

    fn embed(
        &mut self,
        texts: Vec<String>,
    ) -> wasmtime::Result<Result<Vec<Vec<f32>>, embeddings::EmbedError>> {
        let started = Instant::now();
        let refused = if texts.len() > MAX_EMBED_TEXTS {
            Some(format!(
                "{} texts; at most {MAX_EMBED_TEXTS} per call",
                texts.len()
            ))
        } else {
            texts
                .iter()
                .position(|t| t.len() > MAX_EMBED_TEXT_BYTES)
                .map(|i| {
                    format!(
                        "text {i} has {} bytes; at most {MAX_EMBED_TEXT_BYTES}",
                        texts[i].len()
                    )
                })
        };
        let (result, outcome) = match refused {
            Some(reason) => (
                Err(embeddings::EmbedError::InvalidArgument(reason)),
                HostCallOutcome::Error,
            ),
            None => (
                Ok(texts.iter().map(|t| self.corpus.embed(t)).collect()),
                HostCallOutcome::Ok,
            ),
        };
        if let Some(metrics) = &self.metrics {
            metrics.observe(HostCallKind::Embed, outcome, started.elapsed());
        }
        Ok(result)
    }
}

impl config::Host for HostState {
    fn get(&mut self, key: String) -> wasmtime::Result<Option<String>> {
        Ok(self.config.get(&key).cloned())
    }
}

impl log::Host for HostState {
    fn write(&mut self, level: log::Level, message: String) -> wasmtime::Result<()> {
        if !self.log_budget.admit(message.len()) {
            return Ok(());
        }
        // One line per message: control characters are escaped, so a plugin cannot forge lines.
        let message = sanitize(&message, MAX_LOG_MESSAGE);
        let (plugin, request_id) = (&*self.plugin, self.request_id);
        match level {
            log::Level::Debug => tracing::debug!(plugin, request_id, "{message}"),
            log::Level::Info => tracing::info!(plugin, request_id, "{message}"),
            log::Level::Warn => tracing::warn!(plugin, request_id, "{message}"),
            log::Level::Error => tracing::error!(plugin, request_id, "{message}"),
        }
        Ok(())
    }
}
