//! turnstile's tools for plugin authors: `turnstile check` (the runtime's conformance suite, run
//! in full and reported), `turnstile eval` (a question set through a plugin in process, scored)
//! and `turnstile new plugin` (a standalone plugin project in Rust, Python or JavaScript).
//!
//! May depend on: the plugin runtime (`turnstile-host`), the corpus, clap for the commands'
//! flags. Never on the server: these tools run a plugin in process, without HTTP.

pub mod check;
pub mod eval;
pub mod kit;
