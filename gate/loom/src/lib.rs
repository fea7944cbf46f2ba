//! Nothing but a home for the gate's loom model: see `tests/loom.rs`.
