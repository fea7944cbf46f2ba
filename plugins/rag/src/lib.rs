//! turnstile's answering plugin (contract 0.1.4): the best sources from the corpus (hybrid, as
//! the default plugin finds them), told to the client at once, then an answer streamed from a
//! model behind an OpenAI-compatible `POST /v1/chat/completions`, reached through `wasi:http`
//! — only if the operator granted its origin — each token appended as it arrives. README.md has
//! the settings, what it sends and how it fails.
//!
//! Files: the component itself ([`guest`]: bindings, sources, the answer), the HTTP call
//! ([`upstream`]), what it reads from its settings ([`settings`]), the request it sends
//! ([`prompt`]), the events of a streamed answer ([`sse`], [`chunk`]) and a whole one
//! ([`completion`]). All but the first two build natively, for their unit tests.

// wit-bindgen generates the ABI glue (`unsafe`, exported by symbol name) and undocumented
// binding items; a guest cdylib has no Rust API to document.
#![allow(unsafe_code, missing_docs)]
// Natively only the pure parts are built, for their unit tests.
#![cfg_attr(not(target_arch = "wasm32"), allow(dead_code))]

mod chunk;
mod completion;
#[cfg(target_arch = "wasm32")]
mod guest;
mod prompt;
mod settings;
mod sse;
#[cfg(target_arch = "wasm32")]
mod upstream;
