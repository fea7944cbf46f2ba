use std::path::PathBuf;

/// What can go wrong loading or querying the corpus.
#[derive(Debug, thiserror::Error)]
pub enum CorpusError {
    /// The corpus file could not be read.
    #[error("cannot read corpus {path}: {source}")]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// What was given is documents, not a corpus: a folder, or a file that is not JSON Lines
    /// (Markdown, HTML, text, …). `turnstile corpus build` makes a corpus of it.
    #[error(
        "{} {} (a corpus is JSON Lines: one {{\"id\", \"title\", \"text\"}} object a line, \
         plain or gzip). To serve {}, make a corpus of {} first: `turnstile corpus build {} \
         --out corpus.jsonl`, then give corpus.jsonl",
        .path.display(),
        if *.folder {
            "is a folder, not a corpus file"
        } else {
            "is not a corpus file: its first line is not a JSON object"
        },
        if *.folder { "the documents in it" } else { "its text (Markdown, HTML, plain text or CSV)" },
        if *.folder { "them" } else { "it" },
        .path.display()
    )]
    NotACorpus {
        /// What was given.
        path: PathBuf,
        /// A folder (else a file that is not JSON Lines).
        folder: bool,
    },
    /// What was given as the corpus is a WebAssembly file: a plugin, given in the wrong place.
    #[error(
        "{} is WebAssembly (a plugin), not a corpus: give a plugin with --plugin, and a corpus \
         (JSON Lines: one {{\"id\", \"title\", \"text\"}} object a line) with --corpus",
        .path.display()
    )]
    PluginGivenAsCorpus {
        /// What was given.
        path: PathBuf,
    },
    /// The corpus's JSON Lines (decompressed) are over the bound they were read under.
    #[error(
        "the corpus is larger than {limit_mib} MiB of JSON Lines (decompressed), the bound it is read under"
    )]
    TooLarge {
        /// The bound, in MiB.
        limit_mib: u64,
    },
    /// A line of the corpus is not a valid document.
    #[error("corpus line {line}: {reason}")]
    BadDocument {
        /// 1-based line number.
        line: usize,
        /// What is wrong with it.
        reason: String,
    },
    /// Building or opening the SQLite index failed.
    #[error("corpus index {path}: {source}")]
    Index {
        /// The index file.
        path: PathBuf,
        /// SQLite's error.
        source: rusqlite::Error,
    },
    /// An I/O error around the index file (cache directory, rename).
    #[error("corpus index {path}: {source}")]
    IndexIo {
        /// The file or directory.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The embedding model does not load (a broken build: it ships inside the binary).
    #[error("embedding model: {0}")]
    Embedding(String),
    /// The embedding server the operator named failed (past the retries of an index build, or
    /// at once for a question). An index build keeps the passages embedded so far: the next one
    /// resumes from them.
    #[error("{0}")]
    EmbeddingServer(turnstile_embed::RemoteError),
    /// The FTS5 MATCH expression does not parse.
    #[error("bad FTS5 expression: {0}")]
    BadExpression(String),
    /// An argument is out of its documented bound.
    #[error("invalid argument: {0}")]
    InvalidArgument(String),
    /// A query ran past its time budget and was stopped.
    #[error("the query ran past its {} ms time budget", .budget.as_millis())]
    TimedOut {
        /// The budget it had.
        budget: std::time::Duration,
    },
    /// A query failed for another reason.
    #[error("corpus query failed: {0}")]
    Query(#[from] rusqlite::Error),
}
