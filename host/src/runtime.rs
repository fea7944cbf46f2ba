//! The process's one wasmtime `Engine` and `Linker`: the instance allocator (a pool of slots when
//! the address space allows it), and every import a plugin may link — WASI granting nothing, and
//! the contract's own.

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use wasmtime::component::Linker;
use wasmtime::{Config, Engine, InstanceAllocationStrategy, PoolingAllocationConfig};

use crate::capabilities::{
    CapabilityOptions, HostState, MAX_INSTANCES, MAX_MEMORIES, MAX_TABLE_ELEMENTS, MAX_TABLES,
};
use crate::error::PluginError;
use crate::observe::Observer;

/// How instances get their memory.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Allocator {
    /// Slots reserved up front and reused: new store + instantiate + trivial call ~21 µs (with
    /// dirtied pages reset in place, Linux ≥ 6.7) vs ~65–90 µs on demand (docs/BENCHMARKS.md).
    Pooling,
    /// Memory mapped per instance: the fallback where the pool's address space cannot be had.
    OnDemand,
}

/// Settings of the runtime. Made by what the runtime is for — [`RuntimeOptions::serving`],
/// [`RuntimeOptions::conformance`], [`RuntimeOptions::evaluation`] — then the caller's own
/// (`with_cache`, `with_observer`, `with_memory`). `Default` is a serving runtime of 4
/// instances, pooled where the address space allows it, without a precompiled cache, each
/// capability at its defaults.
#[derive(Clone)]
pub struct RuntimeOptions {
    /// Instances that may exist at once (the pool's size): at least the gate's `max_active`.
    pub max_instances: u32,
    /// Where precompiled components are cached; `None` disables the cache.
    pub cache_dir: Option<PathBuf>,
    /// Try the pooling allocator first (falls back to on-demand if it cannot be set up).
    pub pooling: bool,
    /// `None` for serving: calls are never interrupted. `Some(deadline)` for conformance work
    /// (`turnstile check`, a swap's smoke checks): the engine has epoch interruption and a call
    /// still running at the deadline is stopped — or, if it is blocked in a host call (a sleep),
    /// abandoned — and refused with [`PluginError::TimedOut`].
    pub call_deadline: Option<std::time::Duration>,
    /// Told of every corpus host call of every call (`None`: not observed).
    pub observer: Option<Arc<dyn Observer>>,
    /// How each fresh instance gets the component's initial memory.
    pub memory_init: MemoryInit,
    /// Bytes of each pooled linear memory kept resident between calls, its dirtied pages reset in
    /// place (`None`: [`KEEP_RESIDENT_MEMORY`] with [`MemoryInit::Cow`], [`KEEP_RESIDENT_COPY`]
    /// with [`MemoryInit::Copy`]). Used only where the kernel has `PAGEMAP_SCAN`.
    pub keep_resident: Option<usize>,
    /// Every capability's settings (the memory cap is `capabilities.limits.memory_limit`).
    pub capabilities: CapabilityOptions,
}

impl Default for RuntimeOptions {
    fn default() -> Self {
        Self {
            max_instances: 4,
            cache_dir: None,
            pooling: true,
            call_deadline: None,
            observer: None,
            memory_init: MemoryInit::default(),
            keep_resident: None,
            capabilities: CapabilityOptions::default(),
        }
    }
}

/// The runtimes a process makes, by what they are for: each sets what that use needs, and a
/// caller adds only what is its own (its cache, its observer, its memory settings).
impl RuntimeOptions {
    /// The serving runtime: `max_instances` instances (at least the gate's `max_active`: the gate
    /// bounds concurrent calls, and so live instances), pooled where the address space allows,
    /// and calls never interrupted (no epoch interruption, no fuel: a call keeps its slot until
    /// it returns).
    pub fn serving(max_instances: u32, capabilities: CapabilityOptions) -> Self {
        Self {
            max_instances,
            pooling: true,
            call_deadline: None,
            capabilities,
            ..Self::default()
        }
    }

    /// A conformance runtime (`turnstile check`, a swap candidate's smoke checks, the start's
    /// settings check): one instance at a time, not pooled, every call stopped or abandoned at
    /// `deadline`, and each capability's options as it wants them for conformance work (the
    /// outbound capability denies every request: a check sends nothing to a backend — a model
    /// call costs money and time —, lists the grants and proves the denial of what no grant
    /// covers).
    pub fn conformance(deadline: std::time::Duration, capabilities: CapabilityOptions) -> Self {
        let capabilities = capabilities.for_conformance();
        Self {
            max_instances: 1,
            pooling: false,
            call_deadline: Some(deadline),
            capabilities,
            ..Self::default()
        }
    }

    /// The evaluation runtime (`turnstile eval`): one instance at a time, not pooled, calls not
    /// interrupted, outbound as granted (a plugin that asks a model is measured with it).
    pub fn evaluation(capabilities: CapabilityOptions) -> Self {
        Self {
            max_instances: 1,
            pooling: false,
            call_deadline: None,
            capabilities,
            ..Self::default()
        }
    }

    /// With the precompiled cache in `dir` (`None`: compiled every time).
    pub fn with_cache(mut self, dir: Option<PathBuf>) -> Self {
        self.cache_dir = dir;
        self
    }

    /// With `observer` told of every call's host calls.
    pub fn with_observer(mut self, observer: Arc<dyn Observer>) -> Self {
        self.observer = Some(observer);
        self
    }

    /// With instances getting their memory as `init` says, `keep_resident` bytes kept.
    pub fn with_memory(mut self, init: MemoryInit, keep_resident: Option<usize>) -> Self {
        self.memory_init = init;
        self.keep_resident = keep_resident;
        self
    }

    /// With at most `n` instances at once.
    pub fn with_instances(mut self, n: u32) -> Self {
        self.max_instances = n;
        self
    }

    /// With calls stopped at `deadline` instead.
    pub fn with_deadline(mut self, deadline: std::time::Duration) -> Self {
        self.call_deadline = Some(deadline);
        self
    }

    /// The cap on one instance's linear memory, in bytes.
    pub fn memory_limit(&self) -> usize {
        self.capabilities.limits.memory_limit
    }

    /// Bytes of each pooled linear memory kept resident between calls.
    pub fn keep_resident(&self) -> usize {
        self.keep_resident.unwrap_or(match self.memory_init {
            MemoryInit::Cow => KEEP_RESIDENT_MEMORY,
            MemoryInit::Copy => KEEP_RESIDENT_COPY,
        })
    }
}

/// How a fresh instance's linear memory gets the component's initial memory image.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum MemoryInit {
    /// Mapped copy-on-write from the image (wasmtime's default): an instance costs only the pages
    /// its call writes, each a page fault. The cheapest per call when calls run one at a time.
    #[default]
    Cow,
    /// Copied from the image into memory kept resident in its pool slot (up to
    /// [`KEEP_RESIDENT_COPY`]): no page faults. Under load on several cores, where every
    /// copy-on-write fault flushes the other cores' TLBs (costly in a VM), this doubles a
    /// Python plugin's requests/s (docs/PLUGINS.md, "What each capability costs").
    Copy,
}

/// The engine and linker shared by every plugin of the process.
pub struct PluginRuntime {
    engine: Engine,
    linker: Linker<HostState>,
    options: RuntimeOptions,
    allocator: Allocator,
    /// This engine's conformance calls abandoned past their deadline and still running (see
    /// `Plugin::retrieve_bounded`): counted per engine, so one hung candidate (each swap
    /// candidate gets an engine of its own) never holds up another.
    abandoned: Arc<AtomicUsize>,
}

impl MemoryInit {
    /// Its name, as `--plugin-memory-init` takes it.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Cow => "cow",
            Self::Copy => "copy",
        }
    }
}

impl std::fmt::Display for MemoryInit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A name that is no [`MemoryInit`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("expected `cow` or `copy`")]
pub struct UnknownMemoryInit;

impl std::str::FromStr for MemoryInit {
    type Err = UnknownMemoryInit;

    fn from_str(name: &str) -> Result<Self, UnknownMemoryInit> {
        match name {
            "cow" => Ok(Self::Cow),
            "copy" => Ok(Self::Copy),
            _ => Err(UnknownMemoryInit),
        }
    }
}

fn base_config(conformance: bool, memory_init: MemoryInit) -> Config {
    let mut config = Config::new();
    // Serving: deliberately no epoch interruption and no fuel: a plugin call is never cut short
    // by the host. It keeps its worker thread, and so its lease, until it returns (or traps).
    // Conformance work is not serving: there a deadline stops a looping candidate.
    config.epoch_interruption(conformance);
    config.consume_fuel(false);
    config.wasm_component_model(true);
    config.memory_init_cow(memory_init == MemoryInit::Cow);
    // `TURNSTILE_PERFMAP=1`: name every compiled guest function in `/tmp/perf-PID.map`, so that
    // `perf record` / `perf report` on the server show where a plugin's time goes (docs/PLUGINS.md,
    // "Profiling"). Off by default: the map grows with every component compiled.
    if std::env::var_os("TURNSTILE_PERFMAP").is_some_and(|v| v == "1") {
        config.profiler(wasmtime::ProfilingStrategy::PerfMap);
    }
    config
}

/// Bytes of each pooled linear memory kept resident between calls: the pages a call dirtied, up
/// to this much, are reset in place (copied back from the image) and stay mapped; past it they are
/// dropped and the next call page-faults them back in. A Rust plugin dirties well under 1 MiB a
/// call, a Python or JavaScript runtime 2 to 4 MiB (measured: 230 minor faults a call for the
/// Python port at 1 MiB, 1.3 at 4 MiB, 0.5 at 16). Bounded: at most this × `total_memories` of
/// resident memory, and only what calls really wrote.
pub const KEEP_RESIDENT_MEMORY: usize = 16 << 20;
/// With [`MemoryInit::Copy`]: enough for a language runtime's image (CPython's is 12.3 MiB) and
/// what its calls write, so that the copy lands in pages that stay mapped.
pub const KEEP_RESIDENT_COPY: usize = 32 << 20;
/// Bytes of each pooled table kept resident between calls.
const KEEP_RESIDENT_TABLE: usize = 64 << 10;

impl PluginRuntime {
    /// Builds the engine (pooling allocator when possible) and a linker with every capability's
    /// imports (WASI granting nothing, the contract's own).
    pub fn new(options: RuntimeOptions) -> Result<Self, PluginError> {
        let mut engine_and_allocator = None;
        if options.pooling {
            let mut pool = PoolingAllocationConfig::default();
            let n = options.max_instances.max(1);
            pool.total_component_instances(n)
                .total_core_instances(n.saturating_mul(MAX_INSTANCES as u32))
                .total_memories(n.saturating_mul(MAX_MEMORIES as u32))
                .total_tables(n.saturating_mul(MAX_TABLES as u32))
                .total_stacks(n)
                .max_memories_per_component(MAX_MEMORIES as u32)
                .max_tables_per_component(MAX_TABLES as u32)
                .max_core_instances_per_component(MAX_INSTANCES as u32)
                .table_elements(MAX_TABLE_ELEMENTS)
                .max_memory_size(options.memory_limit());
            if PoolingAllocationConfig::is_pagemap_scan_available() {
                // Linux ≥ 6.7: a freed slot's pages that the call dirtied (found with the
                // PAGEMAP_SCAN ioctl) are reset in place and stay mapped, instead of madvise
                // dropping the slot and the next call page-faulting it back in. Measured: a
                // trivial pooled call 44 → 17 µs. Without the ioctl, keeping pages resident means
                // a memset of the whole kept range, which is slower than madvise: not used.
                pool.pagemap_scan(wasmtime::Enabled::Yes)
                    .linear_memory_keep_resident(options.keep_resident())
                    .table_keep_resident(KEEP_RESIDENT_TABLE);
            }
            let mut config = base_config(options.call_deadline.is_some(), options.memory_init);
            config.allocation_strategy(InstanceAllocationStrategy::Pooling(pool));
            match Engine::new(&config) {
                Ok(engine) => engine_and_allocator = Some((engine, Allocator::Pooling)),
                Err(e) => {
                    tracing::warn!(error = %e, "pooling allocator unavailable; using on-demand allocation")
                }
            }
        }
        let (engine, allocator) = match engine_and_allocator {
            Some(found) => found,
            None => (
                Engine::new(&base_config(
                    options.call_deadline.is_some(),
                    options.memory_init,
                ))
                .map_err(PluginError::Engine)?,
                Allocator::OnDemand,
            ),
        };
        let mut linker = Linker::new(&engine);
        crate::capabilities::link(&mut linker).map_err(PluginError::Engine)?;
        Ok(Self {
            engine,
            linker,
            options,
            allocator,
            abandoned: Arc::new(AtomicUsize::new(0)),
        })
    }

    /// This engine's abandoned conformance calls still running.
    pub fn abandoned_calls(&self) -> usize {
        self.abandoned.load(Ordering::SeqCst)
    }

    pub(crate) fn abandoned(&self) -> &Arc<AtomicUsize> {
        &self.abandoned
    }

    /// The process's engine.
    pub fn engine(&self) -> &Engine {
        &self.engine
    }

    /// The allocator in use.
    pub fn allocator(&self) -> Allocator {
        self.allocator
    }

    /// The linker every plugin is linked with.
    pub(crate) fn linker(&self) -> &Linker<HostState> {
        &self.linker
    }

    /// The runtime's settings.
    pub(crate) fn options(&self) -> &RuntimeOptions {
        &self.options
    }
}
