//! `turnstile serve`: corpus → index → plugin → HTTP app → listener, with graceful shutdown on
//! SIGTERM/SIGINT and a plugin reload on SIGHUP; and where its settings come from.

mod args;
mod layered;
mod load;
mod outbound_args;
mod process;
mod run;

pub use crate::logging::LogFormat;
pub use args::{GlobalFailure, MaxActive, ServeArgs, ServeConfigError};
pub use load::{MAX_IDLE_CONNECTIONS, load};
pub use outbound_args::OutboundArgs;
pub use process::{listener, serve};
pub use run::{DrainTimeout, run};
