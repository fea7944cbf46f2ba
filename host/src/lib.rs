//! turnstile's plugin host: the WebAssembly runtime that runs retrieval plugins, and everything
//! that decides whether a component may serve. It knows nothing of HTTP.
//!
//! One wasmtime `Engine` for the process ([`PluginRuntime`]), each component compiled once (or
//! loaded from the precompiled cache, [`cache`]) and pre-linked, and a fresh store and instance for
//! every call ([`Plugin`]). A serving call runs to completion on the caller's (blocking) thread:
//! there is no epoch interruption and no fuel, so a plugin call keeps its worker — and its gate
//! lease — until it really returns. What an instance can reach is in [`capabilities`] (one room
//! per capability, composed into the store's state; WASI granting nothing); what the operator
//! gives one plugin is its [`Provision`]; what it must be is in [`contract`] and in the checks of
//! its answers; [`conformance`] is the suite a candidate passes before it may serve, and [`swap`]
//! replaces the served plugin or corpus ([`PluginSlot`]) at run time.
//!
//! May depend on: the corpus (`turnstile-corpus`), wasmtime and wasmtime-wasi, and general
//! libraries (serde, tracing). Never on the server, the gate, a command-line parser or an HTTP
//! server library: the server (`turnstile-server`) and the plugin authors' tools
//! (`turnstile-author`) depend on this crate, not the reverse; errors are typed, and the codes
//! an HTTP client sees are the server's.

mod bindings;
pub mod cache;
pub mod cache_trim;
mod call_deadline;
mod call_input;
pub mod capabilities;
mod client_link;
pub mod conformance;
pub mod contract;
mod error;
mod freed_memory;
#[cfg(any(test, feature = "fuzzing"))]
#[doc(hidden)]
pub mod fuzzing;
mod observe;
mod output;
mod plugin;
#[cfg(feature = "cli")]
mod plugin_args;
mod plugin_config;
mod precompiled;
mod provision;
mod runtime;
mod secrets;
mod sha256;
mod slot;
mod source;
mod source_checks;
pub mod swap;

pub use bindings::{RetrieveError, Source};
pub use call_deadline::MAX_ABANDONED_CALLS;
pub use call_input::{Asked, CallInput};
pub use capabilities::{
    CapabilityOptions, DEFAULT_MEMORY_LIMIT, MAX_EMBED_TEXT_BYTES, MAX_EMBED_TEXTS, MAX_INSTANCES,
    MAX_MEMORIES, MAX_OPEN_SESSIONS, MAX_RESOURCES, MAX_TABLE_ELEMENTS, MAX_TABLES,
};
pub use client_link::{ClientGuard, ClientLink};
pub use error::{ContractViolation, EmbeddingsFailed, Incompatibility, PluginError};
pub use observe::{HostCallKind, HostCallOutcome, Observer, TRACE_TARGET};
pub use output::{
    MAX_CAPTURED_OUTPUT, MAX_LOG_BYTES, MAX_LOG_CALLS, MAX_LOG_MESSAGE, MAX_LOGGED_TEXT, sanitize,
};
pub use plugin::{CallStats, Plugin};
#[cfg(feature = "cli")]
pub use plugin_args::{PluginArgs, PluginArgsError, PluginSettings};
pub use plugin_config::{
    MAX_CONFIG_KEY_BYTES, MAX_CONFIG_VALUE_BYTES, MAX_PLUGIN_CONFIG_ENTRIES, PluginConfig,
    PluginConfigError, parse_config_entry, plugin_config,
};
pub use precompiled::not_a_component;
pub use provision::{PluginGiven, Provision};
pub use runtime::{
    Allocator, KEEP_RESIDENT_COPY, KEEP_RESIDENT_MEMORY, MemoryInit, PluginRuntime, RuntimeOptions,
    UnknownMemoryInit,
};
pub use secrets::{
    MAX_SECRET_BYTES, MAX_SECRETS, REDACTED, Secret, SecretError, SecretSource, Secrets,
    parse_secret_arg,
};
pub use sha256::{BadSha256, Sha256Hex, sha256_hex};
pub use slot::{CorpusGeneration, Generation, PluginSlot};
pub use source::{MAX_PLUGIN_BYTES, PluginSource, embedded_lexical, embedded_retrieval};
