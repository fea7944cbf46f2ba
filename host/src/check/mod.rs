//! `turnstile check PLUGIN.wasm`: a conformance suite any component can be run against — the
//! contract (world, imports, version), behaviour on a fixed probe set over the shipped corpus,
//! and hygiene (memory asked for stays under the cap). Every check reported can fail.

mod command;
mod probes;
mod suite;

pub use command::{CALL_DEADLINE, CheckArgs, run};
pub use suite::{Check, Report, Subset, run_suite, smoke};
