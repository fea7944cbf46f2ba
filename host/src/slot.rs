//! The plugin being served, replaceable at run time. A request takes the current generation once
//! it is admitted and keeps that `Arc` until it finishes: a swap never changes the plugin under a
//! running call, and the old generation is dropped when its last call ends.

use std::sync::{Arc, Mutex, MutexGuard, RwLock};

use crate::plugin::Plugin;
use crate::source::PluginSource;

/// One installed plugin.
#[derive(Clone)]
pub struct Generation {
    /// 1 for the plugin the server started with, +1 per swap.
    pub number: u64,
    /// The plugin.
    pub plugin: Arc<Plugin>,
    /// Where it came from (what SIGHUP reloads).
    pub source: PluginSource,
}

/// The current generation, swapped atomically.
pub struct PluginSlot {
    current: RwLock<Generation>,
    /// Held for a whole swap (load, checks, install): one candidate at a time.
    swapping: Mutex<()>,
}

impl PluginSlot {
    /// A slot serving `plugin` as generation 1.
    pub fn new(plugin: Plugin, source: PluginSource) -> Self {
        Self {
            current: RwLock::new(Generation {
                number: 1,
                plugin: Arc::new(plugin),
                source,
            }),
            swapping: Mutex::new(()),
        }
    }

    /// Serialises installs: hold the guard from reading the current generation to installing
    /// the next (a candidate is checked before, without it).
    pub fn begin_swap(&self) -> MutexGuard<'_, ()> {
        self.swapping.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The generation serving new requests now.
    pub fn current(&self) -> Generation {
        match self.current.read() {
            Ok(g) => g.clone(),
            Err(poisoned) => poisoned.into_inner().clone(),
        }
    }

    /// Installs `plugin` as the next generation and returns it; calls already running keep
    /// the generation they started with.
    pub fn install(&self, plugin: Plugin, source: PluginSource) -> Generation {
        let mut current = self.current.write().unwrap_or_else(|p| p.into_inner());
        *current = Generation {
            number: current.number + 1,
            plugin: Arc::new(plugin),
            source,
        };
        current.clone()
    }
}
