//! Why a swap candidate was refused: typed, for the caller to map to its own codes (the server's
//! `swap_failed` codes). A refused candidate changed nothing.

use turnstile_corpus::CorpusError;

use super::bounds::{MAX_CANDIDATES_CHECKED, MAX_RETIRED_CORPORA};
use super::roots::Confinement;
use crate::capabilities::Widened;
use crate::{PluginError, Sha256Hex};

/// Why a candidate was refused.
#[derive(Debug, thiserror::Error)]
pub enum SwapError {
    /// An admin swap named a path outside the swap roots: nothing was read.
    #[error("{0}")]
    NotAllowed(#[source] Confinement),
    /// The file could not be read.
    #[error("{0}")]
    Unreadable(#[source] PluginError),
    /// The file is not the one the operator pinned.
    #[error("expected {expected}, the file has {actual}")]
    Sha256Mismatch {
        /// What the operator asked for.
        expected: Sha256Hex,
        /// What the file hashes to.
        actual: String,
    },
    /// Not a component of the contract (world, imports, version).
    #[error("{0}")]
    Incompatible(#[source] PluginError),
    /// No corpus connections could be opened for the candidate.
    #[error("{0}")]
    Corpus(#[source] CorpusError),
    /// The server is pinned and the swap did not name the sha256 it installs.
    #[error(
        "the served plugin is pinned to {pinned}; a swap must give the sha256 of its candidate"
    )]
    PinRequired {
        /// The current pin.
        pinned: Sha256Hex,
    },
    /// A smoke call did not return within the conformance call deadline.
    #[error("{check}: {observed}")]
    Timeout {
        /// The check whose call timed out.
        check: String,
        /// What it observed.
        observed: String,
    },
    /// Another swap installed a generation while this candidate was being checked: nothing was
    /// installed; sending the swap again installs it over the new generation.
    #[error(
        "plugin generation {installed} over corpus generation {corpus} was installed while this candidate was checked; send the swap again to install it over that one"
    )]
    Conflict {
        /// The plugin generation serving now.
        installed: u64,
        /// The corpus generation serving now.
        corpus: u64,
    },
    /// The swap asked a capability for more than the operator gave (an origin not granted): a
    /// swap may narrow what was given, never widen it. Nothing was read.
    #[error(transparent)]
    GrantWidened(Widened),
    /// [`MAX_CANDIDATES_CHECKED`] candidates are being checked already.
    #[error(
        "{MAX_CANDIDATES_CHECKED} candidates are being checked already; send the swap again when one is done"
    )]
    Busy,
    /// It loaded but failed the smoke subset of `turnstile check`.
    #[error("{check}: {observed}")]
    SmokeFailed {
        /// The first check that failed.
        check: String,
        /// What it observed.
        observed: String,
    },
}

/// Why a corpus candidate was refused; the old corpus keeps serving.
#[derive(Debug, thiserror::Error)]
pub enum CorpusSwapError {
    /// An admin swap named a path outside the swap roots: nothing was read.
    #[error("{0}")]
    NotAllowed(#[source] Confinement),
    /// The file could not be read (or decompressed).
    #[error("{0}")]
    Unreadable(#[source] CorpusError),
    /// Its JSON Lines are over the corpus bound (`--corpus-max-mib`): nothing past it was read.
    #[error("{0}")]
    TooLarge(#[source] CorpusError),
    /// Corpora swapped out are still in memory for requests admitted before their swap: another
    /// swap now would hold one more.
    #[error(
        "{held} corpus swapped out is still in memory for requests admitted before its swap (at most {MAX_RETIRED_CORPORA} beside the serving one); send the swap again when they have ended"
    )]
    MemoryHeld {
        /// Retired corpora in memory now.
        held: usize,
    },
    /// A line is not a valid document (the error names the line).
    #[error("{0}")]
    Invalid(#[source] CorpusError),
    /// The corpus is not the one the operator pinned.
    #[error("expected {expected}, the corpus has {actual}")]
    Sha256Mismatch {
        /// What the operator asked for.
        expected: Sha256Hex,
        /// What the corpus hashes to.
        actual: String,
    },
    /// The served corpus is pinned and the swap did not name the sha256 it installs.
    #[error(
        "the served corpus is pinned to {pinned}; a corpus swap must give the sha256 of its candidate"
    )]
    PinRequired {
        /// The current pin.
        pinned: Sha256Hex,
    },
    /// Its index could not be built, opened or loaded.
    #[error("{0}")]
    Index(#[source] CorpusError),
    /// The serving plugin could not be loaded on the conformance engine to check it.
    #[error("load: {0}")]
    Plugin(#[source] PluginError),
    /// A smoke call did not return within the conformance call deadline.
    #[error("{check}: {observed}")]
    Timeout {
        /// The check whose call timed out.
        check: String,
        /// What it observed.
        observed: String,
    },
    /// The serving plugin failed the smoke subset over this corpus.
    #[error("{check}: {observed}")]
    SmokeFailed {
        /// The first check that failed.
        check: String,
        /// What it observed.
        observed: String,
    },
    /// Another swap (of the plugin or the corpus) installed meanwhile: nothing was installed.
    #[error(
        "plugin generation {installed} over corpus generation {corpus} was installed while this candidate was checked; send the swap again"
    )]
    Conflict {
        /// The plugin generation serving now.
        installed: u64,
        /// The corpus generation serving now.
        corpus: u64,
    },
    /// [`super::MAX_CORPUS_CANDIDATES`] corpus candidates are being checked already.
    #[error(
        "a corpus candidate is being loaded and checked already; send the swap again when it is done"
    )]
    Busy,
}

/// What a swap (of a plugin or a corpus) did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SwapOutcome {
    /// A new generation serves new requests.
    Swapped,
    /// The candidate is what serves (a corpus: the same sha256; a plugin: the same sha256,
    /// settings and grants): nothing was installed, no generation was made.
    Unchanged,
}
