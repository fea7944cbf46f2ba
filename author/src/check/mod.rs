//! `turnstile check PLUGIN.wasm`: the runtime's conformance suite (`turnstile_host::conformance`)
//! run in full against any component, reported as lines or JSON.

mod command;
mod report;

pub use command::{CheckArgs, run};
pub use report::lines;
