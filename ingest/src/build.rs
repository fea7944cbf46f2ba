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
use xxhash_rust::xxh3::{Xxh3, xxh3_128};

use turnstile_corpus::MAX_CORPUS_BYTES;

use crate::check;
use crate::durable;
use crate::emit::{MAX_ID_BYTES, Passage, document_passages, row_passages};
pub use crate::error::BuildError;
use crate::files::{self, Input, Skipped};
use crate::ids::Ids;
use crate::manifest;
use crate::meta::Fields;
use crate::pack::{self, Cut};
use crate::reuse::{self, Hashed, Mark, Reuse};
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
    /// CSV and JSON Lines: the column holding a row's text (required). A row's `url` and `kind`
    /// columns are its passages' url and kind; its other columns are kept as their fields.
    #[arg(long, default_value = "text")]
    pub text_column: String,
    /// CSV and JSON Lines: leave out a bad row (not UTF-8, not a JSON object, a field missing or
    /// of the wrong type, a record of the wrong width, a row over 16 MiB, a `url`, `kind` or
    /// other columns past the corpus's bounds), counted and listed by file and line, and keep
    /// the good ones. Without it, the first bad row stops the build.
    #[arg(long)]
    pub skip_bad_rows: bool,
    /// Read every file again: reuse nothing of the last build to `--out`. Without it, a file
    /// unchanged since then (its content hash in `FILE.manifest`, written beside the output)
    /// has its passages copied from the last output, when the settings are the same.
    #[arg(long)]
    pub full: bool,
    /// Where the documents are published (`https://docs.example.com/help`): each passage's url
    /// is then this, `/` and its file's path (`…/guide/cancel.md#refunds`) rather than the path
    /// alone. A document's front matter `url` wins over both.
    #[arg(long, value_name = "URL", value_parser = crate::meta::check_base_url)]
    pub base_url: Option<String>,
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
            full: false,
            base_url: None,
        }
    }
}

impl BuildArgs {
    /// The settings that may change what a file gives, described: every flag but the sources,
    /// `--out` and `--full`, so that a flag added later counts (in the manifest's settings
    /// hash: a change of them reads every file again) without anything to do here. A new flag
    /// that changes no passage is cleared here.
    pub(crate) fn shaping(&self) -> String {
        let shaping = Self {
            sources: Vec::new(),
            out: PathBuf::new(),
            full: false,
            ..self.clone()
        };
        format!("{shaping:?}")
    }

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

/// One line of the corpus file, its keys in the loader's order; `url` and `fields` left out
/// when there are none.
#[derive(Serialize)]
struct Line<'a> {
    id: &'a str,
    kind: &'a str,
    title: &'a str,
    text: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    url: Option<&'a str>,
    #[serde(skip_serializing_if = "Fields::is_empty")]
    fields: &'a Fields,
}

/// Builds the corpus `args.out` from `args.sources`; `progress` shows a bar on a terminal for
/// large inputs.
pub fn build(args: &BuildArgs, progress: bool) -> Result<Summary, BuildError> {
    if let Some(problem) = args.overlap_problem() {
        return Err(BuildError::Settings(format!("--overlap: {problem}")));
    }
    // Passages are sized by the shipped model's tokenizer: compiled in, so this fails only on a
    // broken build, and then before anything is read.
    let tokenizer = turnstile_embed::ShippedTokenizer::get().map_err(|e| {
        BuildError::Settings(format!("the embedding model that sizes passages: {e}"))
    })?;
    let settings = manifest::settings(&args.shaping(), tokenizer.fingerprint());
    let mut inputs = Vec::new();
    let mut skipped = Vec::new();
    let prefixes = files::prefixes(&args.sources)
        .map_err(|(path, source)| BuildError::Source { path, source })?;
    // The output as it is before this build (the last build's), if any: a source folder that
    // holds it must not read it back.
    let output = std::fs::metadata(&args.out)
        .ok()
        .map(|m| files::FileId::of(&m));
    for (source, prefix) in args.sources.iter().zip(&prefixes) {
        let (found, passed) =
            files::find(source, prefix, output).map_err(|e| BuildError::Source {
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
            xxh3: Xxh3::new(),
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
        converted: BTreeMap::new(),
        reuse: Reuse::new(&args.out, args.full, &settings),
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
        converted,
        reuse,
        ..
    } = run;
    let mut changes = reuse.changes.clone();
    changes.removed = reuse.removed();
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
            id: check::id_at(&partial_path, twice.second.0).map_err(write_error(&partial_path))?,
            first: path_of(twice.first.1),
            second: path_of(twice.second.1),
        });
    }
    let partial = writer.out.into_inner().map_err(|e| BuildError::Write {
        path: partial_path.clone(),
        source: e.into_error(),
    })?;
    check::loads(&partial_path)?;
    durable::persist(partial, &args.out)
        .map_err(|(path, source)| BuildError::Write { path, source })?;
    let output_xxh3 = format!("{:032x}", writer.xxh3.digest128());
    changes.manifest_not_written = manifest::write(
        &args.out,
        settings,
        output_xxh3,
        writer.bytes,
        reuse.entries.count,
        reuse.entries.lines(),
    )
    .err();
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
        converted,
        changes,
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
    /// Documents read from other encodings, by encoding.
    converted: BTreeMap<&'static str, usize>,
    /// The last build's passages to copy, this one's manifest.
    reuse: Reuse,
}

/// Inputs of at least this many bytes show a progress bar (as do 50 files or more).
const PROGRESS_BYTES: u64 = 64 << 20;

/// Passages between two updates of the progress bar's count, within a table.
const PROGRESS_PASSAGES: usize = 1 << 12;

impl Run<'_> {
    fn mark(&self) -> Mark {
        Mark {
            bytes: self.writer.bytes,
            passages: self.writer.passages,
            bad_rows: self.bad_rows,
            empty_rows: self.empty_rows,
        }
    }

    fn record(&mut self, at: usize, hash: u128, from: Mark) {
        let to = self.mark();
        self.reuse.record(&self.inputs[at], hash, from, to);
    }

    /// Whether `inputs[at]` is unchanged since the last build ([`Reuse::unchanged`]): then its
    /// passages are copied from the last output, counted, and it is not to be read.
    fn reused(
        &mut self,
        at: usize,
        hash: impl FnOnce() -> std::io::Result<u128>,
    ) -> Result<bool, BuildError> {
        let input = &self.inputs[at];
        let Some(entry) = self.reuse.unchanged(input, hash) else {
            return Ok(false);
        };
        let (from, inputs) = (self.writer.bytes, self.inputs);
        let writer = &mut self.writer;
        self.reuse.copy(&entry, &self.args.out, |line, id| {
            writer.write_line(line, id, at, inputs)
        })?;
        let (bad_rows, empty_rows) = (entry.bad_rows, entry.empty_rows);
        self.reuse.copied(entry, from, self.writer.bytes);
        self.bad_rows += bad_rows;
        self.empty_rows += empty_rows;
        *self.read.entry(input.format.kind()).or_insert(0) += 1;
        Ok(true)
    }

    /// Reads `inputs[at]` and writes its passages.
    fn file(&mut self, at: usize) -> Result<(), BuildError> {
        let input = &self.inputs[at];
        if input.format.is_table() {
            return self.table(at);
        }
        if let Some(bar) = &self.bar {
            bar.inc(input.len);
        }
        let bytes = match files::read_bytes(&input.path) {
            Ok(bytes) => bytes,
            Err(why) => {
                self.skipped.push(files::skip(&input.path, why));
                return Ok(());
            }
        };
        let hash = xxh3_128(&bytes);
        if self.reused(at, || Ok(hash))? {
            return Ok(());
        }
        let (source, converted) = match files::text(&bytes, input.format) {
            Ok(text) => text,
            Err(why) => {
                self.skipped.push(files::skip(&input.path, why));
                return Ok(());
            }
        };
        drop(bytes);
        let mark = self.mark();
        // Each passage written as it is cut; the first write that fails stops the build.
        let mut failed = None;
        let (writer, skipped, inputs) = (&mut self.writer, &mut self.skipped, self.inputs);
        let base_url = self.args.base_url.as_deref();
        let (format, cut) = (input.format, self.cut);
        let outcome = document_passages(&source, format, &input.id_path, cut, base_url, &mut |p| {
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
            Ok(()) => {
                *self.read.entry(input.format.kind()).or_insert(0) += 1;
                if let Some(from) = converted {
                    *self.converted.entry(from).or_insert(0) += 1;
                }
                self.record(at, hash, mark);
            }
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
        if self.reused(at, || reuse::file_hash(&input.path))? {
            if let Some(bar) = &self.bar {
                bar.inc(input.len);
            }
            return Ok(());
        }
        let mark = self.mark();
        let hashed = Hashed::default();
        let opened = std::fs::File::open(&input.path).and_then(|file| {
            let file: Box<dyn std::io::Read> = match &self.bar {
                Some(bar) => Box::new(bar.wrap_read(file)),
                None => Box::new(file),
            };
            crate::encoding::table_reader(hashed.reader(file))
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
        // A table the parse left early (a header without the text column) is hashed whole.
        std::io::copy(&mut reader, &mut std::io::sink()).map_err(source_error)?;
        let hash = hashed.digest();
        *self.read.entry(kind).or_insert(0) += 1;
        self.record(at, hash, mark);
        Ok(())
    }
}

struct Writer {
    out: std::io::BufWriter<NamedTempFile>,
    hash: Sha256,
    /// The output's xxh3-128 (the manifest's name for it).
    xxh3: Xxh3,
    bytes: u64,
    /// Every id written, checked for repeats once all are ([`Ids`]: bounded memory).
    ids: Ids,
    passages: usize,
}

impl Writer {
    /// Writes `p`, a passage of `inputs[at]`.
    fn write(&mut self, p: &Passage, at: usize, inputs: &[Input]) -> Result<(), BuildError> {
        let mut line = serde_json::to_vec(&Line {
            id: &p.id,
            kind: &p.kind,
            title: &p.title,
            text: &p.text,
            url: p.url.as_deref(),
            fields: &p.fields,
        })
        .map_err(|e| BuildError::Settings(e.to_string()))?;
        line.push(b'\n');
        self.write_line(&line, &p.id, at, inputs)
    }

    /// Writes `line` (a passage's, `\n` included), whose id is `id`, of `inputs[at]`.
    fn write_line(
        &mut self,
        line: &[u8],
        id: &str,
        at: usize,
        inputs: &[Input],
    ) -> Result<(), BuildError> {
        let input = &inputs[at];
        if self.bytes + line.len() as u64 > MAX_CORPUS_BYTES {
            return Err(BuildError::TooLarge);
        }
        let number = u32::try_from(self.passages).map_err(|_| BuildError::TooLarge)?;
        let index = u32::try_from(at).unwrap_or(u32::MAX);
        self.ids
            .add(id, number, index)
            .map_err(|source| BuildError::Write {
                path: input.path.clone(),
                source,
            })?;
        self.out
            .write_all(line)
            .map_err(|source| BuildError::Write {
                path: input.path.clone(),
                source,
            })?;
        self.hash.update(line);
        self.xxh3.update(line);
        self.bytes += line.len() as u64;
        self.passages += 1;
        Ok(())
    }
}
