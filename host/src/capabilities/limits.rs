//! The bounds of one plugin instance: its linear memory, tables, core instances and resource
//! table — enforced by the store (growth past a cap traps), and metered for `turnstile check`
//! and the logs.

use wasmtime::{ResourceLimiter, StoreLimits};

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

/// `StoreLimits` (the memory and table caps; growth past them traps) that also records the
/// largest memory the call was granted and the largest memory and table it asked for, for
/// `turnstile check` and the logs.
pub(crate) struct MeteredLimits {
    inner: StoreLimits,
    pub(crate) peak_memory: usize,
    pub(crate) requested_memory: usize,
    pub(crate) requested_table_elements: usize,
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
    pub(crate) fn new(memory_limit: usize) -> Self {
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
