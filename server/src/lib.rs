//! turnstile's server: an HTTP service that admits RAG retrieval requests through a FIFO gate and
//! answers them with a WebAssembly component plugin (run by the plugin host, `turnstile-host`).
//!
//! Data flows one way: connections ([`edge`]) → HTTP requests ([`http`]: validation) →
//! [`admission`] (the local gate, then the global one) → a blocking worker → the plugin
//! (`turnstile-host`) → a corpus session and back. [`metrics`] counts what happens, and
//! [`serve`] reads the settings and wires everything into a process; [`logging`] keeps
//! a slow log sink from ever stalling it, and [`traces`] exports each request's spans.
//!
//! May depend on: the plugin host (`turnstile-host`), the gates (`turnstile-gate`,
//! `turnstile-global`), the corpus for what it reports, and the HTTP stack (axum, hyper,
//! tower), metrics and config libraries. Nothing depends on it but the binary (`turnstile-cli`)
//! and the tests; the client tools (`turnstile-tools`) talk to it over HTTP only.

pub mod admission;
pub mod edge;
#[cfg(any(test, feature = "fuzzing"))]
#[doc(hidden)]
pub mod fuzzing;
pub mod http;
pub mod logging;
pub mod metrics;
pub mod serve;
pub mod swap_codes;
pub mod traces;
