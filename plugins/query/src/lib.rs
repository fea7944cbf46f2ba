//! What turnstile's retrieval plugins do with an untrusted question before the corpus sees it:
//! its terms (stop words dropped, bounded), an FTS5 expression in which every term is a quoted
//! string — so FTS5 syntax typed by a user (`AND`, `NEAR`, `*`, `"`, `:`…) is inert — and how well
//! a document id names the question's terms. Shared by the lexical, hybrid and rag plugins, and
//! built natively for their unit tests and the corpus benchmarks.

pub mod fusion;
mod question;

pub use question::{MAX_TERM_CHARS, MAX_TERMS, fts_expression, id_match, terms};
