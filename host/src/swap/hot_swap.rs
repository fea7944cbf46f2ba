//! [`HotSwap`]: what every swap shares — the slot, the engines, the pins, the counts of
//! candidates being checked — and the rules both kinds of swap follow ([`Trigger`]).

use std::path::PathBuf;
use std::sync::Arc;

use super::bounds::MAX_CANDIDATES_CHECKED;
use super::error::SwapOutcome;
use super::observer::SwapObserver;
use super::roots::SwapRoots;
use crate::capabilities::CapabilityNarrowing;
use crate::conformance::Check;
use crate::{
    Generation, PluginConfig, PluginGiven, PluginRuntime, PluginSlot, PluginSource, RuntimeOptions,
    Sha256Hex,
};

/// What asked for a swap, which decides the sha256 rule and where its file may be.
///
/// The rule, the same on every path and for plugins and corpora alike (each has its own pin):
/// once a plugin (a corpus) was installed with a pin (`--plugin-sha256` / `--corpus-sha256` at
/// startup, or an admin swap that names a `sha256`), it is pinned. A reload (SIGHUP) must then
/// find the file matching the current pin; an admin swap must name the sha256 of its candidate,
/// which becomes the pin. Unpinned, it swaps freely.
#[derive(Debug, Clone)]
pub enum Trigger {
    /// SIGHUP: reload the configured file, under the current pin.
    Reload,
    /// `POST /admin/plugin` or `/admin/corpus`, with the sha256 the request names, if any; its
    /// file must lie under the swap roots.
    Admin {
        /// The candidate's expected sha256; it becomes the pin.
        sha256: Option<Sha256Hex>,
    },
}

impl Trigger {
    /// The sha256 a candidate must have under this trigger, with `pinned` the pin now (`None`:
    /// any); `Err(pin)` when the server is pinned and an admin swap names no sha256.
    pub(super) fn expected(
        &self,
        pinned: Option<Sha256Hex>,
    ) -> Result<Option<Sha256Hex>, Sha256Hex> {
        match (self, pinned) {
            (Self::Reload, pinned) => Ok(pinned),
            (
                Self::Admin {
                    sha256: Some(given),
                },
                _,
            ) => Ok(Some(given.clone())),
            (Self::Admin { sha256: None }, Some(pinned)) => Err(pinned),
            (Self::Admin { sha256: None }, None) => Ok(None),
        }
    }
}

/// The engines a swap uses.
pub struct Runtimes {
    /// Where plugins serve: no epoch interruption, no fuel.
    pub serving: Arc<PluginRuntime>,
    /// How the engine that checks a candidate is made (`call_deadline` set): each candidate
    /// gets a new one, so its deadline interrupts only its own calls, and its abandoned calls
    /// (see [`crate::MAX_ABANDONED_CALLS`]) hold up nothing else.
    pub conformance: RuntimeOptions,
}

/// What a corpus swap needs besides what a plugin swap does.
#[derive(Debug, Clone)]
pub struct CorpusOptions {
    /// Where corpus indexes are built and reused (the cache's index directory).
    pub index_dir: PathBuf,
    /// The corpus sha256 pin at start (`--corpus-sha256`), if any.
    pub pin: Option<Sha256Hex>,
    /// Largest corpus a swap reads, in bytes of JSON Lines (decompressed).
    pub max_bytes: u64,
}

/// A completed swap, of a plugin or a corpus.
pub struct Swapped {
    /// Swapped, or unchanged.
    pub outcome: SwapOutcome,
    /// Now serving new requests.
    pub generation: Generation,
    /// What served before (still finishing the calls it admitted); the same as `generation`
    /// when unchanged.
    pub previous: Generation,
    /// From the request to the install.
    pub elapsed: std::time::Duration,
    /// The smoke checks passed (none when unchanged): the candidate plugin's, or the serving
    /// plugin's over the candidate corpus.
    pub smoke: Vec<Check>,
}

/// What one plugin swap names of its own; the rest comes from [`PluginGiven`].
#[derive(Debug, Clone, Default)]
pub struct SwapSettings {
    /// The candidate's settings.
    pub config: Option<PluginConfig>,
    /// What each capability gives the candidate instead of the operator's gifts (fewer
    /// origins, …).
    pub capabilities: CapabilityNarrowing,
}

/// What a swap needs, shared by `serve`, SIGHUP, `/admin/plugin` and `/admin/corpus`.
pub struct HotSwap {
    pub(super) slot: Arc<PluginSlot>,
    pub(super) runtime: Arc<PluginRuntime>,
    pub(super) conformance: RuntimeOptions,
    /// Candidates being checked now.
    pub(super) checking: std::sync::atomic::AtomicUsize,
    pub(super) defaults: PluginGiven,
    pub(super) idle_connections: usize,
    pub(super) pin: std::sync::Mutex<Option<Sha256Hex>>,
    pub(super) observer: Arc<dyn SwapObserver>,
    /// Where corpus candidates are indexed.
    pub(super) index_dir: PathBuf,
    /// Largest corpus candidate, in bytes of JSON Lines.
    pub(super) corpus_max_bytes: u64,
    /// The corpus pin: the same rule as `pin`, for corpus swaps.
    pub(super) corpus_pin: std::sync::Mutex<Option<Sha256Hex>>,
    /// Corpus candidates being loaded and checked now.
    pub(super) corpus_checking: std::sync::atomic::AtomicUsize,
    /// Corpora swapped out, watched until their last request ends.
    pub(super) retired: std::sync::Mutex<Vec<turnstile_corpus::CorpusWatch>>,
    /// What served at start: what SIGHUP reloads.
    pub(super) configured: Configured,
    /// Where admin swaps may read files.
    pub(super) roots: SwapRoots,
}

/// The files the operator configured (`--plugin`, `--corpus`; `None`: embedded): what a reload
/// returns to, whatever admin swaps installed since.
#[derive(Debug, Clone)]
pub(super) struct Configured {
    pub(super) plugin: PluginSource,
    pub(super) corpus: Option<PathBuf>,
}

impl HotSwap {
    /// Swaps into `slot`, compiling with the serving runtime (and counting each swap in
    /// `metrics`); a candidate's smoke checks run on the conformance runtime (a call deadline:
    /// conformance work is not serving, so a looping or hung candidate is stopped there and
    /// refused). Each candidate gets its own pool of at most `idle_connections` idle
    /// connections, a sibling of the current generation's (the same corpus, loaded once), and
    /// `defaults` for what the swap does not name. Corpus candidates are indexed in
    /// `corpus.index_dir`, under `corpus.pin`.
    pub fn new(
        slot: Arc<PluginSlot>,
        runtimes: Runtimes,
        defaults: PluginGiven,
        idle_connections: usize,
        pin: Option<Sha256Hex>,
        corpus: CorpusOptions,
        observer: Arc<dyn SwapObserver>,
    ) -> Self {
        let serving = slot.current();
        Self {
            configured: Configured {
                plugin: serving.source.clone(),
                corpus: serving.corpus.path.clone(),
            },
            roots: SwapRoots::default(),
            slot,
            runtime: runtimes.serving,
            conformance: runtimes.conformance,
            checking: std::sync::atomic::AtomicUsize::new(0),
            defaults,
            idle_connections,
            pin: std::sync::Mutex::new(pin),
            observer,
            index_dir: corpus.index_dir,
            corpus_max_bytes: corpus.max_bytes,
            corpus_pin: std::sync::Mutex::new(corpus.pin),
            corpus_checking: std::sync::atomic::AtomicUsize::new(0),
            retired: std::sync::Mutex::new(Vec::new()),
        }
    }

    /// Lets admin swaps read files under `roots` (by default: none).
    pub fn with_roots(mut self, roots: SwapRoots) -> Self {
        self.roots = roots;
        self
    }

    /// Where admin swaps may read files.
    pub fn roots(&self) -> &SwapRoots {
        &self.roots
    }

    /// The sha256 every install must match now, if the server is pinned.
    pub fn pin(&self) -> Option<Sha256Hex> {
        self.pin.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// Candidates being compiled and checked now (at most [`MAX_CANDIDATES_CHECKED`]).
    pub fn candidates_checking(&self) -> usize {
        self.checking.load(std::sync::atomic::Ordering::SeqCst)
    }

    /// The names of the secrets every plugin is given (a swap's settings may not use them).
    pub fn secret_names(&self) -> impl Iterator<Item = &str> {
        self.defaults.secrets.names()
    }

    /// The slot swaps install into.
    pub fn slot(&self) -> &Arc<PluginSlot> {
        &self.slot
    }
}

/// A candidate being checked: counted while it lives.
pub(super) struct Checking<'a>(&'a std::sync::atomic::AtomicUsize);

impl<'a> Checking<'a> {
    /// Counts one more candidate, unless [`MAX_CANDIDATES_CHECKED`] are being checked already.
    pub(super) fn enter(checking: &'a std::sync::atomic::AtomicUsize) -> Option<Self> {
        Self::enter_below(checking, MAX_CANDIDATES_CHECKED)
    }

    /// Counts one more candidate, unless `max` are being checked already.
    pub(super) fn enter_below(
        checking: &'a std::sync::atomic::AtomicUsize,
        max: usize,
    ) -> Option<Self> {
        use std::sync::atomic::Ordering;
        checking
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| {
                (n < max).then_some(n + 1)
            })
            .ok()
            .map(|_| Self(checking))
    }
}

impl Drop for Checking<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, std::sync::atomic::Ordering::SeqCst);
    }
}
