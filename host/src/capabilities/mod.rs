//! What a plugin instance can reach, one file per capability (as wasmtime-wasi and Spin's
//! factors lay out theirs): the store's state with its deny-by-default WASI context, the
//! instance's limits, and the contract's four imports — corpus, embeddings, config, log.

mod config;
mod corpus;
mod embeddings;
mod limits;
mod log;
mod state;

pub use corpus::MAX_OPEN_SESSIONS;
pub use embeddings::{MAX_EMBED_TEXT_BYTES, MAX_EMBED_TEXTS};
pub use limits::{MAX_INSTANCES, MAX_MEMORIES, MAX_RESOURCES, MAX_TABLE_ELEMENTS, MAX_TABLES};
pub use log::STDERR_TAIL;
pub(crate) use log::flush_output;
pub(crate) use state::{HostState, limiter};
