//! A file's text into passages, handed on one at a time as they are cut (never a file's
//! passages all at once: a file of many small sections under a long title would hold each
//! title again in memory): ids from the file and the heading (`path#heading-slug`, then
//! `/2`, `/3`… for the further passages of a section), titles from the document and the
//! heading path.

use std::path::Path;

use crate::files::Format;
use crate::passage::{self, Cut, Fragments};
use crate::table::Row;

/// Longest id, in bytes (the corpus's bound).
pub(crate) const MAX_ID_BYTES: usize = 512;

/// A passage before it is written.
pub(crate) struct Passage {
    pub(crate) id: String,
    pub(crate) kind: &'static str,
    pub(crate) title: String,
    pub(crate) text: String,
}

/// The passages of `source`, a document (Markdown, HTML, text) whose path in ids is `id_path`,
/// each handed to `emit` in order. `Err` says why the file is skipped, and comes before any
/// passage is handed on.
pub(crate) fn document_passages(
    source: &str,
    format: Format,
    id_path: &str,
    cut: Cut,
    emit: &mut dyn FnMut(Passage),
) -> Result<(), String> {
    let kind = format.kind();
    let stem = Path::new(id_path)
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    let outline = match format {
        Format::Markdown => crate::markdown::outline(source),
        Format::Html => crate::html::outline(source)?,
        _ => crate::text::outline(source),
    };
    let document = outline.title.unwrap_or(stem);
    let mut fragments = Fragments::default();
    for section in outline.sections {
        let base = match section.headings.last() {
            None => id_path.to_owned(),
            Some(h) => format!("{id_path}#{}", fragments.next(h)),
        };
        let mut parts = vec![document.as_str()];
        parts.extend(section.headings.iter().map(|h| &**h));
        let title = passage::title(&parts);
        let texts = passage::split(&section.text, cut);
        parts_of(&base, kind, &title, texts, emit);
    }
    Ok(())
}

/// The passages of one row of a table (`kind` `csv` or `jsonl`) whose path in ids is
/// `id_path`, handed to `emit` in order: none when it has no text. `Err` (before any passage is
/// handed on) when the row cannot be a passage: its id would pass the corpus's bound.
pub(crate) fn row_passages(
    row: Row,
    kind: &'static str,
    id_path: &str,
    cut: Cut,
    emit: &mut dyn FnMut(Passage),
) -> Result<(), String> {
    if row.text.is_empty() {
        return Ok(());
    }
    let base = row
        .id
        .unwrap_or_else(|| format!("{id_path}#row-{}", row.number));
    if base.len() > MAX_ID_BYTES {
        return Err(format!("an id over {MAX_ID_BYTES} bytes"));
    }
    let title = passage::title(&[row.title.as_deref().unwrap_or(&base)]);
    let texts = passage::split(&row.text, cut);
    // The last passage's id is the longest (`ID/N`).
    let n = texts.len();
    if n > 1 && base.len() + 1 + n.to_string().len() > MAX_ID_BYTES {
        return Err(format!(
            "an id over {MAX_ID_BYTES} bytes (its passage `/{n}`)"
        ));
    }
    parts_of(&base, kind, &title, texts, emit);
    Ok(())
}

/// The passages of `source`, a file of `format` whose path in ids is `id_path`, each handed to
/// `emit` in order; returns how many of its rows had no text. `Err` says why the file is refused
/// (a table: its first bad row), and comes before any passage is handed on (for the fuzz
/// target's checks and tests: the builder streams tables, [`row_passages`]).
#[cfg(any(test, feature = "fuzzing"))]
pub(crate) fn passages_from(
    source: &str,
    format: Format,
    id_path: &str,
    cut: Cut,
    columns: &crate::table::Columns,
    emit: &mut dyn FnMut(Passage),
) -> Result<usize, String> {
    let read: crate::table::Rows = match format {
        Format::Csv => crate::table::csv_rows,
        Format::Jsonl => crate::table::jsonl_rows,
        _ => return document_passages(source, format, id_path, cut, emit).map(|()| 0),
    };
    let rows = crate::table::all_rows(read, source, columns)?;
    let mut empty = 0;
    let mut passages = Vec::new();
    for row in rows {
        let line = row.line;
        empty += usize::from(row.text.is_empty());
        row_passages(row, format.kind(), id_path, cut, &mut |p| passages.push(p))
            .map_err(|why| format!("line {line}: {why}"))?;
    }
    passages.into_iter().for_each(emit);
    Ok(empty)
}

/// The passages of one section or row, its `texts`, each handed to `emit`: `base`, then
/// `base/2`, `base/3`…
fn parts_of(
    base: &str,
    kind: &'static str,
    title: &str,
    texts: Vec<String>,
    emit: &mut dyn FnMut(Passage),
) {
    for (i, text) in texts.into_iter().enumerate() {
        emit(Passage {
            id: if i == 0 {
                base.to_owned()
            } else {
                format!("{base}/{}", i + 1)
            },
            kind,
            title: title.to_owned(),
            text,
        });
    }
}
