//! The `limits` capability: the bounds of one plugin instance — its linear memory, tables, core
//! instances and resource table — enforced by the store (growth past a cap traps), metered, and
//! checked by `turnstile check` (what a plugin asks for, granted or refused, stays under the
//! cap). It links no import: it is what every instance is given.

use wasmtime::component::Linker;
use wasmtime::{ResourceLimiter, StoreLimits};

use super::capability::{Call, Capability, HasRoom, Probe, Report};
use crate::error::PluginError;
use crate::provision::Provision;

/// The default cap on one instance's linear memory: 64 MiB.
pub const DEFAULT_MEMORY_LIMIT: usize = 64 << 20;

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

/// Entries of one call's resource table (sessions, WASI streams and pollables).
pub const MAX_RESOURCES: usize = 1024;

/// The instance's bounds.
pub struct Limits;

/// The bounds every instance of a runtime gets.
#[derive(Debug, Clone, Copy)]
pub struct LimitsOptions {
    /// Cap on one instance's linear memory, in bytes; growth past it traps.
    pub memory_limit: usize,
}

impl Default for LimitsOptions {
    fn default() -> Self {
        Self {
            memory_limit: DEFAULT_MEMORY_LIMIT,
        }
    }
}

/// What one call's instance asked for and was granted.
#[derive(Debug, Clone, Copy, Default)]
pub struct MemoryReport {
    /// The largest linear memory the call was granted, in bytes.
    pub peak_memory: usize,
    /// The largest linear memory the call asked for, granted or refused, in bytes: above the
    /// cap when the plugin tried to grow past it.
    pub requested_memory: usize,
    /// The most elements the call asked one of its tables to hold, granted or refused.
    pub requested_table_elements: usize,
}

impl Report for MemoryReport {
    fn absorb(&mut self, later: &Self) {
        self.peak_memory = self.peak_memory.max(later.peak_memory);
        self.requested_memory = self.requested_memory.max(later.requested_memory);
        self.requested_table_elements = self
            .requested_table_elements
            .max(later.requested_table_elements);
    }
}

impl Capability for Limits {
    const INTERFACES: &'static [(&'static str, &'static str)] = &[];

    type Options = LimitsOptions;
    /// The cap on linear memory, in bytes.
    type Grant = usize;
    type State = MeteredLimits;
    type Report = MemoryReport;

    fn link<T: HasRoom<Self>>(_: &mut Linker<T>) -> wasmtime::Result<()> {
        // Nothing to import: the store enforces the limits (`HostState`'s limiter).
        Ok(())
    }

    fn grant(options: &LimitsOptions, _: &Provision) -> Result<usize, PluginError> {
        Ok(options.memory_limit)
    }

    fn state(_: &LimitsOptions, memory_limit: &usize, _: &Call) -> MeteredLimits {
        MeteredLimits::new(*memory_limit)
    }

    fn finish(limits: &mut MeteredLimits, _: &Call) -> MemoryReport {
        MemoryReport {
            peak_memory: limits.peak_memory,
            requested_memory: limits.requested_memory,
            requested_table_elements: limits.requested_table_elements,
        }
    }

    /// What the plugin asked for, granted or refused: a plugin that tries to grow past the cap
    /// fails here even when the refusal did not make a probe fail.
    fn probes(_: &LimitsOptions, cap: &usize, used: &MemoryReport) -> Vec<Probe> {
        let mib = |bytes: usize| bytes as f64 / (1 << 20) as f64;
        let outcome = if used.requested_memory > *cap {
            Err(format!(
                "asked for {:.1} MiB (granted at most {:.1} MiB)",
                mib(used.requested_memory),
                mib(used.peak_memory)
            ))
        } else if used.requested_table_elements > MAX_TABLE_ELEMENTS {
            Err(format!(
                "asked for a table of {} elements",
                used.requested_table_elements
            ))
        } else {
            Ok(format!("peak {:.1} MiB", mib(used.peak_memory)))
        };
        vec![Probe {
            name: "hygiene.memory".into(),
            expected: format!(
                "linear memory asked for ≤ {} MiB, tables ≤ {MAX_TABLE_ELEMENTS} elements",
                cap >> 20
            ),
            outcome,
        }]
    }
}

/// `StoreLimits` (the memory and table caps; growth past them traps) that also records the
/// largest memory the call was granted and the largest memory and table it asked for, for
/// `turnstile check` and the logs.
pub struct MeteredLimits {
    inner: StoreLimits,
    peak_memory: usize,
    requested_memory: usize,
    requested_table_elements: usize,
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

impl MeteredLimits {
    /// The caps of one instance whose linear memory may grow to `memory_limit` bytes.
    fn new(memory_limit: usize) -> Self {
        Self {
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
        }
    }
}
