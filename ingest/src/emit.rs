//! A file's text into passages, handed on one at a time as they are cut (never a file's
//! passages all at once: a file of many small sections under a long title would hold each
//! title again in memory): ids from the file and the heading (`path#heading-slug`, then
//! `/2`, `/3`… for the further passages of a section), titles from the document and the
//! heading path; what the document or the row says of itself carried beside (its kind, its url,
//! its fields: [`crate::meta`]).

use std::borrow::Cow;
use std::path::Path;
use std::rc::Rc;

use crate::files::Format;
use crate::front_matter::{self, FrontMatter};
use crate::meta::{self, Fields};
use crate::passage::{self, Cut, Fragments};
use crate::table::Row;

/// Longest id, in bytes (the corpus's bound).
pub(crate) const MAX_ID_BYTES: usize = 512;

/// A passage before it is written.
pub(crate) struct Passage {
    pub(crate) id: String,
    pub(crate) kind: Cow<'static, str>,
    pub(crate) title: String,
    pub(crate) text: String,
    /// Its link back, within the corpus's bounds; `None` for a row without a `url`.
    pub(crate) url: Option<String>,
    /// Its document's or row's fields, within the corpus's bounds (shared by its passages).
    pub(crate) fields: Rc<Fields>,
}

/// What every passage of a section or a row carries beside its text.
struct Carried<'a> {
    kind: &'a Cow<'static, str>,
    url: Option<&'a str>,
    fields: &'a Rc<Fields>,
}

/// The passages of `source`, a document (Markdown, HTML, text) whose path in ids is `id_path`,
/// each handed to `emit` in order; its url is that path, after `base_url` when there is one
/// (`--base-url`), unless its front matter names one (a relative one after `base_url` too).
/// `Err` says why the file is skipped, and comes before any passage is handed on.
pub(crate) fn document_passages(
    source: &str,
    format: Format,
    id_path: &str,
    cut: Cut,
    base_url: Option<&str>,
    emit: &mut dyn FnMut(Passage),
) -> Result<(), String> {
    let stem = Path::new(id_path)
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    let (outline, front) = match format {
        Format::Markdown => {
            let read = crate::markdown::read(source);
            let front = match read.front_matter {
                Some((style, text)) => front_matter::parse(style, &text)?,
                None => FrontMatter::default(),
            };
            (read.outline, front)
        }
        Format::Html => (crate::html::outline(source)?, FrontMatter::default()),
        _ => (crate::text::outline(source), FrontMatter::default()),
    };
    let url = match front.url {
        Some(url) => meta::front_matter_url(base_url, url)?,
        None => meta::document_url(base_url, id_path)?,
    };
    let kind = front.kind.map_or(Cow::Borrowed(format.kind()), Cow::Owned);
    let fields = Rc::new(front.fields);
    let document = front.title.or(outline.title).unwrap_or(stem);
    let mut fragments = Fragments::default();
    for section in outline.sections {
        let (base, slug) = match section.headings.last() {
            None => (id_path.to_owned(), None),
            Some(h) => {
                let fragment = fragments.next(h);
                (format!("{id_path}#{fragment}"), Some(fragment))
            }
        };
        // The anchor the document gives the section; for Markdown, else the one GitHub gives
        // its heading (the id's fragment).
        let anchor = section
            .anchor
            .as_deref()
            .or(slug.as_deref().filter(|_| format == Format::Markdown));
        let section_url = anchor.map_or_else(|| url.clone(), |a| meta::with_fragment(&url, a));
        let mut parts = vec![document.as_str()];
        parts.extend(section.headings.iter().map(|h| &**h));
        let title = passage::title(&parts);
        let texts = passage::split(&section.text, cut);
        let carried = Carried {
            kind: &kind,
            url: Some(&section_url),
            fields: &fields,
        };
        parts_of(&base, &carried, &title, texts, emit);
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
    let kind = row.kind.map_or(Cow::Borrowed(kind), Cow::Owned);
    let carried = Carried {
        kind: &kind,
        url: row.url.as_deref(),
        fields: &Rc::new(row.fields),
    };
    parts_of(&base, &carried, &title, texts, emit);
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
    base_url: Option<&str>,
    emit: &mut dyn FnMut(Passage),
) -> Result<usize, String> {
    let read: crate::table::Rows = match format {
        Format::Csv => crate::table::csv_rows,
        Format::Jsonl => crate::table::jsonl_rows,
        _ => {
            return document_passages(source, format, id_path, cut, base_url, emit).map(|()| 0);
        }
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
    carried: &Carried<'_>,
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
            kind: carried.kind.clone(),
            title: title.to_owned(),
            text,
            url: carried.url.map(str::to_owned),
            fields: Rc::clone(carried.fields),
        });
    }
}
