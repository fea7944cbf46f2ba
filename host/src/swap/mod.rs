//! Replacing what serves without a restart: the plugin (`POST /admin/plugin`, SIGHUP;
//! `plugin`) and the corpus (`POST /admin/corpus`, SIGHUP; `corpus`). Either way a candidate
//! is loaded and checked off the serving path and without the install lock — a plugin is read,
//! hashed, compiled, checked against the contract and smoke-checked; a corpus is read, hashed,
//! indexed, loaded and the serving plugin smoke-checked over it — then installed in one atomic
//! step over the generation it was checked against. A refused candidate changes nothing: the old
//! generation keeps serving, and requests admitted before a swap finish on what they started
//! with.
//!
//! [`HotSwap`] is what every swap shares: the slot it installs into, the engines, the operator's
//! default settings and the pins. `serve`, SIGHUP and the admin endpoints share one; none of
//! them needs the HTTP state.

mod corpus;
mod hot_swap;
mod plugin;

pub use corpus::{CorpusSwap, CorpusSwapError, CorpusSwapped, MAX_CORPUS_CANDIDATES};
pub use hot_swap::{CorpusOptions, HotSwap, MAX_CANDIDATES_CHECKED, Runtimes, Trigger};
pub use plugin::{SwapError, Swapped};
