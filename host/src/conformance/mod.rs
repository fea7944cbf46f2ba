//! The conformance suite any component can be run against — the contract (world, imports,
//! version), behaviour on a fixed probe set over the shipped corpus, and each capability's own
//! probes (the memory asked for stays under the cap, …). Every check reported can fail. The
//! runtime runs its smoke subset on every swap candidate before it may serve; `turnstile check`
//! (in the plugin authors' tools) runs all of it.

mod probes;
mod suite;

pub use suite::{CALL_DEADLINE, Check, Report, Subset, SuiteOptions, run_suite, smoke};
