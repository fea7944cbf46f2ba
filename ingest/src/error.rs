//! Why a build stopped.

use std::path::PathBuf;

use turnstile_corpus::MAX_CORPUS_BYTES;

/// Why a build stopped (the output file is left as it was).
#[derive(Debug, thiserror::Error)]
pub enum BuildError {
    /// A source cannot be read.
    #[error("{}: {source}", .path.display())]
    Source {
        /// The source.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// Settings that do not go together.
    #[error("{0}")]
    Settings(String),
    /// A row of a table cannot be read (without `--skip-bad-rows`).
    #[error(
        "{}: line {line}: {why} (--skip-bad-rows leaves such rows out and keeps the others)",
        .path.display()
    )]
    BadRow {
        /// The table.
        path: PathBuf,
        /// The line (1-based) the row starts on.
        line: usize,
        /// What is wrong with it.
        why: String,
    },
    /// Two passages would have the same id.
    #[error("id {id:?} comes from both {} and {}", .first.display(), .second.display())]
    DuplicateId {
        /// The id.
        id: String,
        /// The file that gave it first.
        first: PathBuf,
        /// The file that gave it again.
        second: PathBuf,
    },
    /// Nothing to write.
    #[error("no passages: {0}")]
    Empty(String),
    /// The output cannot be written.
    #[error("{}: {source}", .path.display())]
    Write {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The corpus would pass what `serve --corpus` loads.
    #[error(
        "the corpus would pass {} GiB of JSON Lines, the most `serve --corpus` loads",
        MAX_CORPUS_BYTES >> 30
    )]
    TooLarge,
    /// The corpus's loader refused what was built (a bug of the builder).
    #[error("the built corpus does not load: {0}")]
    Invalid(#[from] turnstile_corpus::CorpusError),
}
