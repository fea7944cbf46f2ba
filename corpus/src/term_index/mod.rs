//! The corpus's own inverted index, for ranking a disjunction of terms without SQL.
//!
//! FTS5 ranks an `"a" OR "b" OR …` query by computing `bm25()` for every document that matches
//! any term, one row at a time through its auxiliary-function API (instances, column sizes): about
//! 1.5 µs per matching document, so a question whose terms match 1,000 documents costs 1.5 ms, and
//! the cost grows with the corpus. This index holds the same postings in memory — for every token,
//! the documents it occurs in with its count in the `title` and `text` columns — and each
//! document's size, all read from FTS5 itself when the index file is built (`fts5vocab`), so the
//! tokens are FTS5's by construction. [`TermIndex::rank`] computes the very `bm25()` FTS5 computes
//! (same formula, same operations in the same order, so the same `f64`s) for the documents that
//! could make the top, by MaxScore over windows of documents (`max_score.rs`), and keeps the best: the
//! result of scoring every matching document, without reading most postings of common tokens.
//! A phrase of several
//! tokens (`"round_half_up"`: `round half up`) gets its postings when asked: the documents that
//! have its rarest token and all the others, where its tokens follow one another in one column
//! (counted in each document's `title` and `text` tokens, which the index keeps in order).
//!
//! It also makes FTS5's `snippet()` of the `text` column without FTS5 ([`TermIndex::snippet`]):
//! asked for one document, FTS5 re-parses the expression and seeks every term's doclist to it
//! (~90 µs), when the snippet itself needs only the document's tokens and which of them are the
//! query's. The index keeps each document's tokens (their ids, from FTS5), reads the one text
//! it snippets from the index file (a lookup by rowid, a few microseconds: holding every text
//! would cost as much memory as the postings and the texts' loading most of the open), and
//! follows FTS5's snippet algorithm step by step (`fts5SnippetFunction`, `fts5HighlightCb`).
//! Token byte offsets are found by scanning the text as unicode61 does: runs of letters and
//! digits (ASCII ones exactly; beyond ASCII `char::is_alphanumeric`, close to unicode61's
//! categories L*, N* and Co), which may go on with one of the combining diacritics unicode61
//! folds away. A document with a NUL, or whose count of runs differs from FTS5's count of tokens,
//! is left to FTS5.
//!
//! Memory: 8 bytes per posting (document, weighted count: bm25's term-frequency part is computed
//! when read), 4 per token of title and text, about 16 per token of the vocabulary and its text,
//! about 33 per document. Stored in the index file as those arrays
//! (`build.rs`), so opening copies them rather than parsing a row per token and per document.

mod build;
mod index;
mod kept;
mod max_score;
mod packed;
mod rank;
mod snippet;
mod tokens;

#[cfg(test)]
mod tests;

pub(crate) use build::build;
pub(crate) use index::TermIndex;
#[cfg(test)]
pub(crate) use rank::FORCE_MAX_SCORE;
pub(crate) use tokens::Phrase;
