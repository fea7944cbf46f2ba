//! turnstile's plugin host: the WebAssembly runtime that runs retrieval plugins, and everything
//! that decides whether a component may serve. It knows nothing of HTTP.
//!
//! One wasmtime `Engine` for the process ([`PluginRuntime`]), each component compiled once (or
//! loaded from the precompiled cache, [`cache`]) and pre-linked, and a fresh store and instance for
//! every call ([`Plugin`]). A serving call runs to completion on the caller's (blocking) thread:
//! there is no epoch interruption and no fuel, so a plugin call keeps its worker — and its gate
//! lease — until it really returns. What an instance can reach is in [`capabilities`] (one file
//! per capability, WASI granting nothing); what it must be is in [`contract`] and in the checks
//! of its answers; [`check`] is the conformance suite, [`swap`] replaces the served plugin
//! ([`PluginSlot`]) at run time, [`eval`] scores a plugin on a question set in process, and [`kit`]
//! writes a plugin author's starting project in any of the supported languages.
//!
//! May depend on: the corpus (`turnstile-corpus`), wasmtime and wasmtime-wasi, and general
//! libraries (serde, clap for its two commands' flags, tracing). Never on the server, the gate
//! or an HTTP library: the server (`turnstile-server`) depends on this crate, not the reverse.

mod bindings;
mod bounded;
pub mod cache;
pub mod capabilities;
pub mod check;
pub mod contract;
mod error;
pub mod eval;
#[cfg(any(test, feature = "fuzzing"))]
#[doc(hidden)]
pub mod fuzzing;
pub mod kit;
mod observe;
mod output;
mod plugin;
mod plugin_config;
mod precompiled;
mod results;
mod runtime;
mod slot;
mod source;
pub mod swap;

pub use bindings::{RetrieveError, Source};
pub use bounded::MAX_ABANDONED_CALLS;
pub use capabilities::{
    MAX_EMBED_TEXT_BYTES, MAX_EMBED_TEXTS, MAX_INSTANCES, MAX_MEMORIES, MAX_OPEN_SESSIONS,
    MAX_RESOURCES, MAX_TABLE_ELEMENTS, MAX_TABLES,
};
pub use error::{ContractViolation, Incompatibility, PluginError};
pub use observe::{HostCallKind, HostCallOutcome, Observer};
pub use output::{
    MAX_CAPTURED_OUTPUT, MAX_LOG_BYTES, MAX_LOG_CALLS, MAX_LOG_MESSAGE, MAX_LOGGED_TEXT, sanitize,
};
pub use plugin::{CallStats, Plugin};
pub use plugin_config::{
    BadSha256, MAX_CONFIG_KEY_BYTES, MAX_CONFIG_VALUE_BYTES, MAX_PLUGIN_CONFIG_ENTRIES,
    PluginConfig, PluginConfigError, Sha256Hex, parse_config_entry, plugin_config,
};
pub use runtime::{Allocator, KEEP_RESIDENT_COPY, MemoryInit, PluginRuntime, RuntimeOptions};
pub use slot::{CorpusGeneration, Generation, PluginSlot};
pub use source::{
    MAX_PLUGIN_BYTES, PluginSource, embedded_lexical, embedded_retrieval, sha256_hex,
};
