//! The plugin being served, over the corpus being served, replaceable at run time. A request
//! takes the current generation once it is admitted and keeps that `Arc` until it finishes: a
//! swap never changes the plugin or the corpus under a running call, and an old generation (its
//! plugin, and the corpus it loaded) is dropped when its last call ends.

use std::path::PathBuf;
use std::sync::{Arc, Mutex, MutexGuard, RwLock};

use turnstile_corpus::CorpusIndex;

use crate::plugin::Plugin;
use crate::source::PluginSource;

/// One installed plugin over one installed corpus.
#[derive(Clone)]
pub struct Generation {
    /// The plugin's generation: 1 for the plugin the server started with, +1 per plugin swap (a
    /// corpus swap keeps it).
    pub number: u64,
    /// The plugin, reading `corpus`.
    pub plugin: Arc<Plugin>,
    /// Where it came from (what SIGHUP reloads).
    pub source: PluginSource,
    /// The corpus it reads.
    pub corpus: CorpusGeneration,
}

/// One installed corpus.
#[derive(Debug, Clone)]
pub struct CorpusGeneration {
    /// 1 for the corpus the server started with, +1 per corpus swap (a plugin swap keeps it).
    pub number: u64,
    /// Its index: the sha256 of its JSON Lines, its size, where it came from.
    pub index: Arc<CorpusIndex>,
    /// The file it was read from (what SIGHUP reloads), `None` for the embedded corpus.
    pub path: Option<PathBuf>,
}

impl Generation {
    /// Whether `other` is the same plugin generation over the same corpus generation.
    pub fn same_as(&self, other: &Generation) -> bool {
        self.number == other.number && self.corpus.number == other.corpus.number
    }
}

/// The current generation, swapped atomically.
pub struct PluginSlot {
    current: RwLock<Generation>,
    /// Held from reading the current generation to installing the next.
    swapping: Mutex<()>,
}

impl PluginSlot {
    /// A slot serving `plugin` (generation 1) over the corpus of `index` (corpus generation 1),
    /// read from `corpus_path` (`None`: the embedded corpus).
    pub fn new(
        plugin: Plugin,
        source: PluginSource,
        index: CorpusIndex,
        corpus_path: Option<PathBuf>,
    ) -> Self {
        Self {
            current: RwLock::new(Generation {
                number: 1,
                plugin: Arc::new(plugin),
                source,
                corpus: CorpusGeneration {
                    number: 1,
                    index: Arc::new(index),
                    path: corpus_path,
                },
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

    /// Installs `plugin` (over the current corpus) as the next plugin generation and returns
    /// it; calls already running keep the generation they started with.
    pub fn install(&self, plugin: Plugin, source: PluginSource) -> Generation {
        let mut current = self.current.write().unwrap_or_else(|p| p.into_inner());
        *current = Generation {
            number: current.number + 1,
            plugin: Arc::new(plugin),
            source,
            corpus: current.corpus.clone(),
        };
        current.clone()
    }

    /// Installs the next corpus generation: `plugin` is the serving plugin reading the corpus
    /// of `index`; calls already running keep the corpus they started with.
    pub fn install_corpus(
        &self,
        plugin: Plugin,
        index: CorpusIndex,
        path: Option<PathBuf>,
    ) -> Generation {
        let mut current = self.current.write().unwrap_or_else(|p| p.into_inner());
        *current = Generation {
            number: current.number,
            plugin: Arc::new(plugin),
            source: current.source.clone(),
            corpus: CorpusGeneration {
                number: current.corpus.number + 1,
                index: Arc::new(index),
                path,
            },
        };
        current.clone()
    }
}
