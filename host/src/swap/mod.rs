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
//! default settings, the pins, the configured files (what SIGHUP reloads) and the roots admin
//! swaps read from ([`SwapRoots`]). `serve`, SIGHUP and the admin endpoints share one; none of
//! them needs the HTTP state. Refusals are typed ([`SwapError`], [`CorpusSwapError`]); the codes
//! a client sees are the server's.

mod bounds;
mod corpus;
mod error;
mod hot_swap;
mod observer;
mod plugin;
mod reading;
mod roots;

pub use bounds::{MAX_CANDIDATES_CHECKED, MAX_CORPUS_CANDIDATES, MAX_RETIRED_CORPORA};
pub use error::{CorpusSwapError, SwapError, SwapOutcome};
pub use hot_swap::{CorpusOptions, HotSwap, Runtimes, SwapSettings, Swapped, Trigger};
pub use observer::SwapObserver;
pub use reading::SWAP_READ_DEADLINE;
pub use roots::{Confinement, Opened, RootError, SwapRoots, unsafe_root};
