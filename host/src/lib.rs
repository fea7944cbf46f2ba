//! turnstile: an HTTP service that admits RAG retrieval requests through a FIFO gate and answers
//! them with a WebAssembly component plugin reading a SQLite FTS5 corpus through host functions.
//!
//! Data flows one way: HTTP edge ([`http`]) → worker thread → plugin ([`plugin`]) → corpus
//! session ([`corpus`]) and back.

pub mod check;
pub mod config;
pub mod corpus;
pub mod drive;
pub mod gate;
pub mod http;
pub mod load;
pub mod plugin;
pub mod server;
pub mod swap;

/// Paths of the components the build placed in `target/plugins/` (for tests and tools).
pub mod components {
    include!(concat!(env!("OUT_DIR"), "/components.rs"));
}

/// `<pid>-<n>`, unique within this machine for a temporary file name: concurrent writers of the
/// same cache entry (threads or processes) never clobber each other's half-written files.
pub(crate) fn unique_suffix() -> String {
    use std::sync::atomic::{AtomicU64, Ordering};
    static NEXT: AtomicU64 = AtomicU64::new(0);
    format!(
        "{}-{}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    )
}
