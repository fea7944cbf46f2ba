//! The WebAssembly plugin runtime: one engine for the process, each plugin compiled once, and a
//! fresh store and instance for every call. A call runs to completion on the caller's (blocking)
//! thread: there is no epoch interruption and no fuel, so a plugin call keeps its worker — and its
//! gate lease — until it really returns.

mod bindings;
mod component;
pub mod contract;
mod error;
mod host;
mod runtime;
mod slot;

pub use bindings::{RetrieveError, Source};
pub use component::{CallStats, Plugin, PluginSource};
pub use error::PluginError;
pub use host::PluginConfig;
pub use runtime::{Allocator, PluginRuntime, RuntimeOptions};
pub use slot::{Generation, PluginSlot};
