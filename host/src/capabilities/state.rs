//! The data of one call's `Store`: what a plugin instance can reach — its corpus sessions, its
//! operator-given config, the log — and a WASI context that grants nothing (no files, sockets,
//! environment or arguments). Dropping it, with the store, closes every session still open.

use std::sync::Arc;

use turnstile_corpus::CorpusPool;
use wasmtime::ResourceLimiter;
use wasmtime::component::ResourceTable;
use wasmtime_wasi::{WasiCtx, WasiCtxView, WasiView};

use super::limits::{MAX_RESOURCES, MeteredLimits};
use crate::observe::Observer;
use crate::output::{CapturedOutput, LogBudget};
use crate::plugin_config::PluginConfig;

/// The data of one call's `Store`. Dropping it (with the store) closes every session still open.
pub struct HostState {
    pub(crate) wasi: WasiCtx,
    pub(crate) table: ResourceTable,
    pub(crate) limits: MeteredLimits,
    pub(crate) corpus: CorpusPool,
    pub(crate) config: Arc<PluginConfig>,
    pub(crate) plugin: Arc<str>,
    pub(crate) request_id: u64,
    pub(crate) open_sessions: usize,
    pub(crate) stdout: CapturedOutput,
    pub(crate) stderr: CapturedOutput,
    pub(crate) log_budget: LogBudget,
    pub(crate) observer: Option<Arc<dyn Observer>>,
}

impl HostState {
    pub(crate) fn new(
        corpus: CorpusPool,
        config: Arc<PluginConfig>,
        plugin: Arc<str>,
        request_id: u64,
        memory_limit: usize,
        observer: Option<Arc<dyn Observer>>,
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
        let limits = MeteredLimits::new(memory_limit);
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
            observer,
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
pub(crate) fn limiter(state: &mut HostState) -> &mut dyn ResourceLimiter {
    &mut state.limits
}
