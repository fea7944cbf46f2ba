//! `turnstile serve`: corpus → index → plugin → HTTP app → listener, with graceful shutdown on
//! SIGTERM/SIGINT and a reload of the configured plugin and corpus on SIGHUP; and where its settings come from.

mod access_args;
mod args;
mod cache_args;
mod layered;
mod load;
mod memory_args;
mod process;
mod run;

pub use crate::logging::LogFormat;
pub use access_args::AccessArgs;
pub use args::{GlobalFailure, MaxActive, ServeArgs, ServeConfigError};
pub use cache_args::CacheArgs;
pub use load::{MAX_IDLE_CONNECTIONS, load};
pub use process::{listener, serve};
pub use run::{DrainTimeout, run};
