//! Shared test support: the service's router driven in process (`oneshot`, no socket), a real
//! turnstile server on a loopback socket in this process, `serve` children of the real binary,
//! the shipped components as files, and waiting on state with a deadline.

mod app;
mod bodies;
mod child;
mod files;
mod load;
mod server;
pub mod upstream;
mod wait;

pub use app::TestApp;
pub use bodies::{ids, statuses};
pub use child::{
    child_metrics, child_retrieve, child_state_when, logged, series_value, serve_child, stop_child,
};
pub use files::{binary, cache_dir, hybrid_plugin, lexical_plugin, sha256_of};
pub use load::{args, try_load};
pub use server::{TestServer, delay_server, impatient_client};
pub use wait::{STATE_DEADLINE, eventually, eventually_within};
