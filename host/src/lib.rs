//! turnstile, the server: an HTTP service that admits RAG retrieval requests through a FIFO gate
//! and answers them with a WebAssembly component plugin reading a SQLite FTS5 corpus through host
//! functions.
//!
//! Data flows one way: HTTP edge ([`http`]) → gate ([`gate`]) → worker thread → plugin
//! ([`plugin`]) → corpus session ([`corpus`]) and back. Around that path: [`swap`] replaces the
//! plugin at run time, [`check`] is the conformance suite a candidate must pass, and [`serve`]
//! wires everything into a process. The load generator and the driver are clients of this
//! server and live in their own crate (`turnstile-tools`).

pub mod cache;
pub mod check;
pub mod eval;
pub mod http;
pub mod metrics;
pub mod plugin;
pub mod serve;
pub mod swap;

pub use turnstile_corpus as corpus;
pub use turnstile_gate as gate;
