//! The bounds of one session call.

use std::time::Duration;

/// Bounds on what one session call accepts and returns. They answer a plugin (or a question
/// passed through it) that asks for too much: a huge expression, an unbounded result.
#[derive(Debug, Clone, Copy)]
pub struct SessionLimits;

impl SessionLimits {
    /// Longest FTS5 expression accepted, in bytes: room for the default plugin's longest
    /// expression (32 terms of at most 48 characters, quoted, joined with ` OR `: 6,332 bytes).
    pub const MAX_EXPRESSION_BYTES: usize = 8192;
    /// Most terms (quoted strings and bare words, operators aside) in one expression: what a
    /// query costs grows with its terms, so the bound is on them, not only on bytes.
    pub const MAX_EXPRESSION_TERMS: usize = 64;
    /// How long one host call may run in SQLite before it is stopped with
    /// [`CorpusError::TimedOut`]: the serving engine never interrupts a plugin, so a costly
    /// expression (prefix terms, `NEAR` over many terms) is bounded here instead.
    pub const CALL_TIME_BUDGET: Duration = Duration::from_millis(250);
    /// Most candidates one search returns (larger limits are clamped).
    pub const MAX_CANDIDATES: u32 = 50;
    /// Longest id accepted by `get`, in bytes.
    pub const MAX_ID_BYTES: usize = 512;
    /// Longest snippet returned, in bytes.
    pub const MAX_SNIPPET_BYTES: usize = 300;
    /// Longest title returned, in bytes.
    pub const MAX_TITLE_BYTES: usize = 512;
}
