//! `turnstile corpus build SRC… --out FILE`: every input's passages, written in order to a
//! corpus file, checked by the corpus's own loader before it replaces `FILE`.

use std::collections::BTreeMap;
use std::io::{BufRead, Write};
use std::ops::ControlFlow;
use std::path::{Path, PathBuf};

use clap::builder::TypedValueParser;
use serde::Serialize;
use sha2::{Digest, Sha256};

use tempfile::NamedTempFile;

use turnstile_corpus::MAX_CORPUS_BYTES;

use crate::durable;
use crate::emit::{MAX_ID_BYTES, Passage, document_passages, row_passages};
use crate::files::{self, Input, Skipped};
use crate::ids::Ids;
use crate::pack::{self, Cut};
use crate::summary::{BadRow, MAX_LISTED, Summary};
use crate::table::{self, Columns};

/// `turnstile corpus build`'s arguments.
#[derive(Debug, Clone, clap::Args)]
pub struct BuildArgs {
    /// Files and folders to read: Markdown (.md, .markdown), HTML (.html, .htm), plain text
    /// (.txt), CSV with a header (.csv) and JSON Lines (.jsonl). Folders are read whole, in
    /// name order; hidden entries and symbolic links are skipped.
    #[arg(required = true, value_name = "SRC")]
    pub sources: Vec<PathBuf>,
    /// The corpus file to write (JSON Lines, what `serve --corpus` reads); replaced only when
    /// the build succeeds.
    #[arg(long, value_name = "FILE")]
    pub out: PathBuf,
    /// Most characters in a passage, a hard bound beside --max-tokens (the corpus allows 2,000).
    #[arg(long, default_value_t = pack::DEFAULT_MAX_CHARS,
          value_parser = clap::value_parser!(u16).range(100..=2000).map(usize::from))]
    pub max_chars: usize,
    /// Most tokens of the embedding model (its WordPiece tokenizer) in a passage.
    #[arg(long, default_value_t = pack::DEFAULT_MAX_TOKENS,
          value_parser = clap::value_parser!(u16).range(32..=1024).map(usize::from))]
    pub max_tokens: usize,
    /// Tokens of a passage's end that the next passage of the same section repeats (whole
    /// sentences, else whole words), at most half of --max-tokens.
    #[arg(long, default_value_t = pack::DEFAULT_OVERLAP,
          value_parser = clap::value_parser!(u16).range(0..=512).map(usize::from))]
    pub overlap: usize,
    /// CSV and JSON Lines: the column holding a row's id (a row without one gets
    /// `PATH#row-N`).
    #[arg(long, default_value = "id")]
    pub id_column: String,
    /// CSV and JSON Lines: the column holding a row's title (a row without one: its id).
    #[arg(long, default_value = "title")]
    pub title_column: String,
    /// CSV and JSON Lines: the column holding a row's text (required).
    #[arg(long, default_value = "text")]
    pub text_column: String,
    /// CSV and JSON Lines: leave out a bad row (not UTF-8, not a JSON object, a field missing or
    /// of the wrong type, a record of the wrong width, a row over 16 MiB), counted and listed by
    /// file and line, and keep the good ones. Without it, the first bad row stops the build.
    #[arg(long)]
    pub skip_bad_rows: bool,
}

#[cfg(test)]
impl BuildArgs {
    /// One source built into `out` with the command line's defaults (for tests).
    pub(crate) fn one(source: &Path, out: &Path) -> Self {
        Self {
            sources: vec![source.to_owned()],
            out: out.to_owned(),
            max_chars: crate::DEFAULT_MAX_CHARS,
            max_tokens: crate::DEFAULT_MAX_TOKENS,
            overlap: crate::DEFAULT_OVERLAP,
            id_column: "id".into(),
            title_column: "title".into(),
            text_column: "text".into(),
            skip_bad_rows: false,
        }
    }
}

impl BuildArgs {
    /// What is wrong with `--overlap` beside `--max-tokens`, if anything (each flag's own bounds
    /// are its parser's): the check across settings, said without the flag's name.
    pub fn overlap_problem(&self) -> Option<String> {
        (self.overlap > self.max_tokens / 2).then(|| {
            format!(
                "{} is over half of --max-tokens ({})",
                self.overlap, self.max_tokens
            )
        })
    }
}

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

/// One line of the corpus file, its keys in the loader's order.
#[derive(Serialize)]
struct Line<'a> {
    id: &'a str,
    kind: &'a str,
    title: &'a str,
    text: &'a str,
}

/// Builds the corpus `args.out` from `args.sources`; `progress` shows a bar on a terminal for
/// large inputs.
pub fn build(args: &BuildArgs, progress: bool) -> Result<Summary, BuildError> {
    if let Some(problem) = args.overlap_problem() {
        return Err(BuildError::Settings(format!("--overlap: {problem}")));
    }
    // Passages are sized by the shipped model's tokenizer: compiled in, so this fails only on a
    // broken build, and then before anything is read.
    turnstile_embed::Embedder::shipped().map_err(|e| {
        BuildError::Settings(format!("the embedding model that sizes passages: {e}"))
    })?;
    let mut inputs = Vec::new();
    let mut skipped = Vec::new();
    for source in &args.sources {
        let (found, passed) =
            files::find(std::slice::from_ref(source)).map_err(|e| BuildError::Source {
                path: source.clone(),
                source: e,
            })?;
        inputs.extend(found);
        skipped.extend(passed);
    }
    let total: u64 = inputs.iter().map(|i| i.len).sum();
    let bar = (progress && (inputs.len() >= 50 || total >= PROGRESS_BYTES)).then(|| {
        let bar = indicatif::ProgressBar::new(total);
        if let Ok(style) = indicatif::ProgressStyle::with_template(
            "{bar:40} {bytes}/{total_bytes}, {msg} passages ({elapsed}, {eta} left)",
        ) {
            bar.set_style(style);
        }
        bar.set_message("0");
        bar
    });

    // A failed build leaves no temporary behind (`NamedTempFile` removes itself when dropped,
    // on an early return or a panic alike) and the output as it was.
    let partial = durable::temporary_beside(&args.out).map_err(|source| BuildError::Write {
        path: args.out.clone(),
        source,
    })?;
    let partial_path = partial.path().to_owned();
    let spill_dir = partial_path.parent().unwrap_or(Path::new(".")).to_owned();
    let mut run = Run {
        args,
        cut: Cut {
            max_chars: args.max_chars,
            max_tokens: args.max_tokens,
            overlap: args.overlap,
        },
        columns: Columns {
            id: args.id_column.clone(),
            title: args.title_column.clone(),
            text: args.text_column.clone(),
        },
        inputs: &inputs,
        writer: Writer {
            out: std::io::BufWriter::with_capacity(1 << 20, partial),
            hash: Sha256::new(),
            bytes: 0,
            ids: Ids::new(&spill_dir),
            passages: 0,
        },
        skipped,
        read: BTreeMap::new(),
        empty_rows: 0,
        bad_rows: 0,
        bad_rows_listed: Vec::new(),
        bar,
    };
    let result = (|| {
        for at in 0..inputs.len() {
            run.file(at)?;
            if let Some(bar) = &run.bar {
                bar.set_message(run.writer.passages.to_string());
            }
        }
        run.writer.out.flush().map_err(|source| BuildError::Write {
            path: partial_path.clone(),
            source,
        })
    })();
    if let Some(bar) = &run.bar {
        bar.finish_and_clear();
    }
    let Run {
        writer,
        skipped,
        read,
        empty_rows,
        bad_rows,
        bad_rows_listed,
        ..
    } = run;
    result?;
    if writer.passages == 0 {
        return Err(BuildError::Empty(format!(
            "{} files read, {} skipped",
            read.values().sum::<usize>(),
            skipped.len()
        )));
    }
    let write_error = |path: &Path| {
        let path = path.to_owned();
        move |source: std::io::Error| BuildError::Write { path, source }
    };
    if let Some(twice) = writer.ids.duplicate().map_err(write_error(&spill_dir))? {
        let path_of = |input: u32| inputs[input as usize].path.clone();
        return Err(BuildError::DuplicateId {
            id: id_at(&partial_path, twice.second.0).map_err(write_error(&partial_path))?,
            first: path_of(twice.first.1),
            second: path_of(twice.second.1),
        });
    }
    let partial = writer.out.into_inner().map_err(|e| BuildError::Write {
        path: partial_path.clone(),
        source: e.into_error(),
    })?;
    loads(&partial_path)?;
    durable::persist(partial, &args.out)
        .map_err(|(path, source)| BuildError::Write { path, source })?;
    Ok(Summary {
        out: args.out.clone(),
        read,
        skipped,
        empty_rows,
        bad_rows,
        bad_rows_listed,
        passages: writer.passages,
        bytes: writer.bytes,
        sha256: hex::encode(writer.hash.finalize()),
    })
}

/// A build under way.
struct Run<'a> {
    args: &'a BuildArgs,
    cut: Cut,
    columns: Columns,
    inputs: &'a [Input],
    writer: Writer,
    skipped: Vec<Skipped>,
    read: BTreeMap<&'static str, usize>,
    empty_rows: usize,
    bad_rows: usize,
    bad_rows_listed: Vec<BadRow>,
    /// On a terminal, for many files or large ones: bytes read.
    bar: Option<indicatif::ProgressBar>,
}

/// Inputs of at least this many bytes show a progress bar (as do 50 files or more).
const PROGRESS_BYTES: u64 = 64 << 20;

/// Passages between two updates of the progress bar's count, within a table.
const PROGRESS_PASSAGES: usize = 1 << 12;

impl Run<'_> {
    /// Reads `inputs[at]` and writes its passages.
    fn file(&mut self, at: usize) -> Result<(), BuildError> {
        let input = &self.inputs[at];
        if input.format.is_table() {
            return self.table(at);
        }
        if let Some(bar) = &self.bar {
            bar.inc(input.len);
        }
        let source = match files::read(&input.path) {
            Ok(source) => source,
            Err(why) => {
                self.skipped.push(files::skip(&input.path, why));
                return Ok(());
            }
        };
        // Each passage written as it is cut; the first write that fails stops the build.
        let mut failed = None;
        let (writer, skipped, inputs) = (&mut self.writer, &mut self.skipped, self.inputs);
        let outcome =
            document_passages(&source, input.format, &input.id_path, self.cut, &mut |p| {
                if failed.is_some() {
                    return;
                }
                if p.id.len() > MAX_ID_BYTES {
                    skipped.push(files::skip(
                        &input.path,
                        format!("a passage's id is over {MAX_ID_BYTES} bytes"),
                    ));
                } else if let Err(e) = writer.write(&p, at, inputs) {
                    failed = Some(e);
                }
            });
        if let Some(e) = failed {
            return Err(e);
        }
        match outcome {
            Err(why) => self.skipped.push(files::skip(&input.path, why)),
            Ok(()) => *self.read.entry(input.format.kind()).or_insert(0) += 1,
        }
        Ok(())
    }

    /// Reads the table `inputs[at]` a row at a time and writes each row's passages as it is
    /// read: a bad row stops the build, or is left out and counted under `--skip-bad-rows`.
    fn table(&mut self, at: usize) -> Result<(), BuildError> {
        let input = &self.inputs[at];
        let source_error = |source| BuildError::Source {
            path: input.path.clone(),
            source,
        };
        // A table that cannot be opened is passed over, as a document that cannot be read; one
        // that fails while it is read stops the build (some of its rows are written).
        let opened = std::fs::File::open(&input.path).and_then(|file| {
            let file: Box<dyn std::io::Read> = match &self.bar {
                Some(bar) => Box::new(bar.wrap_read(file)),
                None => Box::new(file),
            };
            files::buffered(file)
        });
        let mut reader = match opened {
            Ok(reader) => reader,
            Err(e) => {
                self.skipped.push(files::skip(&input.path, e.to_string()));
                return Ok(());
            }
        };
        let rows: table::Rows = match input.format {
            files::Format::Csv => table::csv_rows,
            _ => table::jsonl_rows,
        };
        let kind = input.format.kind();
        let (cut, skip_bad_rows, inputs) = (self.cut, self.args.skip_bad_rows, self.inputs);
        let mut failed = None;
        let mut shown = self.writer.passages;
        rows(&mut reader as &mut dyn BufRead, &self.columns, &mut |row| {
            let bad = match row {
                Err(bad) => bad,
                Ok(row) => {
                    let line = row.line;
                    if row.text.is_empty() {
                        self.empty_rows += 1;
                        return ControlFlow::Continue(());
                    }
                    let mut wrote = Ok(());
                    let writer = &mut self.writer;
                    if let Some(bar) = &self.bar
                        && writer.passages >= shown + PROGRESS_PASSAGES
                    {
                        shown = writer.passages;
                        bar.set_message(shown.to_string());
                    }
                    let outcome = row_passages(row, kind, &input.id_path, cut, &mut |p| {
                        if wrote.is_ok() {
                            wrote = writer.write(&p, at, inputs);
                        }
                    });
                    if let Err(e) = wrote {
                        failed = Some(e);
                        return ControlFlow::Break(());
                    }
                    match outcome {
                        Ok(()) => return ControlFlow::Continue(()),
                        Err(why) => table::BadRow { line, why },
                    }
                }
            };
            if !skip_bad_rows {
                failed = Some(BuildError::BadRow {
                    path: input.path.clone(),
                    line: bad.line,
                    why: bad.why,
                });
                return ControlFlow::Break(());
            }
            self.bad_rows += 1;
            if self.bad_rows_listed.len() < MAX_LISTED {
                self.bad_rows_listed.push(BadRow {
                    path: input.path.clone(),
                    line: bad.line,
                    why: bad.why,
                });
            }
            ControlFlow::Continue(())
        })
        .map_err(source_error)?;
        if let Some(e) = failed {
            return Err(e);
        }
        *self.read.entry(kind).or_insert(0) += 1;
        Ok(())
    }
}

struct Writer {
    out: std::io::BufWriter<NamedTempFile>,
    hash: Sha256,
    bytes: u64,
    /// Every id written, checked for repeats once all are ([`Ids`]: bounded memory).
    ids: Ids,
    passages: usize,
}

impl Writer {
    /// Writes `p`, a passage of `inputs[at]`.
    fn write(&mut self, p: &Passage, at: usize, inputs: &[Input]) -> Result<(), BuildError> {
        let input = &inputs[at];
        let mut line = serde_json::to_vec(&Line {
            id: &p.id,
            kind: p.kind,
            title: &p.title,
            text: &p.text,
        })
        .map_err(|e| BuildError::Settings(e.to_string()))?;
        line.push(b'\n');
        if self.bytes + line.len() as u64 > MAX_CORPUS_BYTES {
            return Err(BuildError::TooLarge);
        }
        let number = u32::try_from(self.passages).map_err(|_| BuildError::TooLarge)?;
        let index = u32::try_from(at).unwrap_or(u32::MAX);
        self.ids
            .add(&p.id, number, index)
            .map_err(|source| BuildError::Write {
                path: input.path.clone(),
                source,
            })?;
        self.out
            .write_all(&line)
            .map_err(|source| BuildError::Write {
                path: input.path.clone(),
                source,
            })?;
        self.hash.update(&line);
        self.bytes += line.len() as u64;
        self.passages += 1;
        Ok(())
    }
}

/// The id of the `n`th (0-based) line of the corpus written to `path`.
fn id_at(path: &Path, n: u32) -> std::io::Result<String> {
    #[derive(serde::Deserialize)]
    struct Id {
        id: String,
    }
    let mut file = std::io::BufReader::new(std::fs::File::open(path)?);
    let mut line = Vec::new();
    for _ in 0..=n {
        line.clear();
        file.read_until(b'\n', &mut line)?;
    }
    let id: Id = serde_json::from_slice(&line).map_err(std::io::Error::other)?;
    Ok(id.id)
}

/// Bytes of the written corpus checked at a time, at most (whole lines; a line may pass it).
/// The loader holds a piece's documents and ids besides its bytes: about three times as much.
const CHECKED_BYTES: usize = 16 << 20;

/// Lines of the written corpus checked at a time, at most: short lines cost more per byte in
/// the loader (each document and id allocated on its own).
const CHECKED_LINES: usize = 1 << 16;

/// The server's own loader, on the bytes written: what `serve --corpus` will accept. Read in
/// pieces of whole lines, so the check holds a piece, not the corpus (the writer has made sure
/// that no id comes twice across pieces); a refusal names the line of the whole file.
fn loads(path: &Path) -> Result<(), BuildError> {
    use std::io::BufRead;
    let error = |source| BuildError::Write {
        path: path.to_owned(),
        source,
    };
    let mut file = std::io::BufReader::new(std::fs::File::open(path).map_err(error)?);
    let mut piece = Vec::new();
    let mut lines_before = 0;
    loop {
        piece.clear();
        let mut lines = 0;
        while piece.len() < CHECKED_BYTES && lines < CHECKED_LINES {
            if file.read_until(b'\n', &mut piece).map_err(error)? == 0 {
                break;
            }
            lines += 1;
        }
        if piece.is_empty() {
            return Ok(());
        }
        turnstile_corpus::load_documents(&piece).map_err(|e| match e {
            turnstile_corpus::CorpusError::BadDocument { line, reason } => {
                turnstile_corpus::CorpusError::BadDocument {
                    line: line + lines_before,
                    reason,
                }
            }
            other => other,
        })?;
        lines_before += lines;
    }
}
