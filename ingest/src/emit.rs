//! A file's text into passages, handed on one at a time as they are cut (never a file's
//! passages all at once: a file of many small sections under a long title would hold each
//! title again in memory): ids from the file and the heading (`path#heading-slug`, then
//! `/2`, `/3`… for the further passages of a section), titles from the document and the
//! heading path.

use std::path::Path;

use crate::files::Format;
use crate::passage::{self, Cut, Fragments};
use crate::table::{self, Columns, Row};

/// A passage before it is written.
pub(crate) struct Passage {
    pub(crate) id: String,
    pub(crate) kind: &'static str,
    pub(crate) title: String,
    pub(crate) text: String,
}

/// The passages of `source`, a file of `format` whose path in ids is `id_path`, each handed to
/// `emit` in order; returns how many of its rows had no text. `Err` says why the file is skipped,
/// and comes before any passage is handed on.
pub(crate) fn passages_from(
    source: &str,
    format: Format,
    id_path: &str,
    cut: Cut,
    columns: &Columns,
    emit: &mut dyn FnMut(Passage),
) -> Result<usize, String> {
    let kind = format.kind();
    let stem = Path::new(id_path)
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    let read: table::Rows = match format {
        Format::Csv => table::csv_rows,
        Format::Jsonl => table::jsonl_rows,
        Format::Markdown | Format::Html | Format::Text => {
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
                parts_of(&base, kind, &title, &section.text, cut, emit);
            }
            return Ok(0);
        }
    };
    let mut empty = 0;
    table::rows_then(read, source, columns, &mut |row: Row| {
        if row.text.is_empty() {
            empty += 1;
            return;
        }
        let base = row
            .id
            .unwrap_or_else(|| format!("{id_path}#row-{}", row.number));
        let title = passage::title(&[row.title.as_deref().unwrap_or(&base)]);
        parts_of(&base, kind, &title, &row.text, cut, emit);
    })?;
    Ok(empty)
}

/// The passages of one section or row: `base`, then `base/2`, `base/3`…
fn parts_of(
    base: &str,
    kind: &'static str,
    title: &str,
    text: &str,
    cut: Cut,
    emit: &mut dyn FnMut(Passage),
) {
    for (i, text) in passage::split(text, cut).into_iter().enumerate() {
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
