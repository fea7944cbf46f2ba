//! The WebAssembly plugin runtime: one engine for the process, each plugin compiled once, and a
//! fresh store and instance for every call. A call runs to completion on the caller's (blocking)
//! thread: there is no epoch interruption and no fuel, so a plugin call keeps its worker — and its
//! gate lease — until it really returns.

mod bindings;
mod component;
mod config;
pub mod contract;
mod error;
mod host;
mod output;
mod runtime;
mod slot;

pub use bindings::{RetrieveError, Source};
pub use component::{
    CallStats, MAX_ABANDONED_CALLS, MAX_PLUGIN_BYTES, Plugin, PluginSource, embedded_lexical,
    embedded_retrieval, sha256_hex,
};
pub use config::{
    BadSha256, MAX_CONFIG_KEY_BYTES, MAX_CONFIG_VALUE_BYTES, MAX_PLUGIN_CONFIG_ENTRIES,
    PluginConfig, PluginConfigError, Sha256Hex, parse_config_entry, plugin_config,
};
pub use error::{ContractViolation, Incompatibility, PluginError};
pub use host::{
    MAX_EMBED_TEXT_BYTES, MAX_EMBED_TEXTS, MAX_INSTANCES, MAX_MEMORIES, MAX_OPEN_SESSIONS,
    MAX_RESOURCES, MAX_TABLE_ELEMENTS, MAX_TABLES,
};
pub use output::{
    MAX_CAPTURED_OUTPUT, MAX_LOG_BYTES, MAX_LOG_CALLS, MAX_LOG_MESSAGE, MAX_LOGGED_TEXT, sanitize,
};
pub use runtime::{Allocator, PluginRuntime, RuntimeOptions};
pub use slot::{Generation, PluginSlot};
