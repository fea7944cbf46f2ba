//! What the `ingest_file` fuzz target checks (`fuzz/`, run by `cargo fuzz`: `fuzz/run.sh`): the
//! builder's readers — Markdown, HTML, plain text, CSV and JSON Lines — and the passage splitter,
//! on any file and any cut. None panics; every passage is within the cut's characters and the
//! embedding model's tokens, and the corpus's bounds; the passages are bounded by the input (as
//! many as its sections or rows, and one more for every character of their text that is not
//! whitespace: each passage holds something new); every kind, url and fields written pass the
//! corpus's checks; a file refused says where (a row or a line of it) or why (its front matter).
//! `cargo test` runs the kept cases on stable (`fuzz/seeds/ingest_file/`,
//! `fuzz/regressions/ingest_file/`). Time is bounded by the fuzzer (`-timeout` in
//! `fuzz/run.sh`) and the pathological inputs' tests (`crate::pathological`).

use turnstile_corpus::metadata::{check_fields, check_url};

use crate::emit::passages_from;
use crate::files::Format;
use crate::passage::{Cut, MAX_TITLE_BYTES};
use crate::table::{self, Columns};

/// The formats, by the input's first byte.
const FORMATS: [Format; 5] = [
    Format::Markdown,
    Format::Html,
    Format::Text,
    Format::Csv,
    Format::Jsonl,
];

/// The fuzzer's bytes as a file: the first byte picks the format, the next two the cut (as
/// `--max-chars` 100..=2000, `--max-tokens` 32..=1024 from the same byte, and `--overlap` at
/// most half of the tokens), the rest is the file's text
/// (as the builder reads it: invalid UTF-8 replaced, a byte-order mark dropped, CRLF as LF).
///
/// # Panics
/// When a reader or the splitter misbehaves.
pub fn ingest_file(data: &[u8]) {
    let [pick, max, overlap, rest @ ..] = data else {
        return;
    };
    let format = FORMATS[usize::from(*pick) % FORMATS.len()];
    let max_chars = 100 + usize::from(*max) * 1900 / 255;
    let max_tokens = 32 + usize::from(*max) * (1024 - 32) / 255;
    let cut = Cut {
        max_chars,
        max_tokens,
        overlap: usize::from(*overlap) * (max_tokens / 2) / 255,
    };
    let text = String::from_utf8_lossy(rest);
    let text = text
        .strip_prefix('\u{feff}')
        .unwrap_or(&text)
        .replace("\r\n", "\n");
    // The first byte's high bit: urls after a `--base-url`.
    let base_url = (pick & 0x80 != 0).then_some("https://docs.example.com/help");
    check(&text, format, cut, base_url);
}

/// The invariants on one text of one format, cut by `cut`, its urls after `base_url`.
pub(crate) fn check(text: &str, format: Format, cut: Cut, base_url: Option<&str>) {
    let columns = Columns {
        id: "id".into(),
        title: "title".into(),
        text: "text".into(),
    };
    let chars = text.chars().count();
    let lines = text.lines().count().max(1);
    // What each section or row holds, in characters: for the readers of documents, at most
    // eight times the input's (a table's header is repeated on each of its rows, within eight
    // times the table's cells: `table_text`; a tab in a code block's indent may become spaces;
    // everything else shrinks: markup goes, entities become one character).
    // Characters that are not whitespace in the sections' or rows' text.
    let mut visible = 0;
    let units = match format {
        Format::Markdown | Format::Html | Format::Text => {
            let outline = match format {
                Format::Markdown => crate::markdown::outline(text),
                Format::Html => match crate::html::outline(text) {
                    Ok(outline) => outline,
                    Err(why) => {
                        refused_at_a_row(&why, format, lines);
                        Default::default()
                    }
                },
                _ => crate::text::outline(text),
            };
            let gathered: usize = outline
                .sections
                .iter()
                .map(|s| s.text.chars().count())
                .sum();
            assert!(gathered <= 8 * chars, "{gathered} characters from {chars}");
            visible = outline
                .sections
                .iter()
                .map(|s| s.text.chars().filter(|c| !c.is_whitespace()).count())
                .sum();
            if let Some(title) = &outline.title {
                assert!(title.chars().count() <= 4 * chars);
            }
            outline.sections.len()
        }
        Format::Csv | Format::Jsonl => {
            let read: table::Rows = if format == Format::Csv {
                table::csv_rows
            } else {
                table::jsonl_rows
            };
            let rows = table::all_rows(read, text, &columns);
            match rows {
                Ok(rows) => {
                    assert!(rows.len() <= lines, "{} rows of {lines} lines", rows.len());
                    visible = rows
                        .iter()
                        .map(|r| r.text.chars().filter(|c| !c.is_whitespace()).count())
                        .sum();
                    rows.len()
                }
                Err(why) => {
                    refused_at_a_row(&why, format, lines);
                    0
                }
            }
        }
    };
    let id_path = "docs/fuzz.input";
    let embedder = turnstile_embed::Embedder::shipped().expect("the shipped model loads");
    let mut passages = Vec::new();
    match passages_from(text, format, id_path, cut, &columns, base_url, &mut |p| {
        passages.push(p)
    }) {
        Ok(empty) => {
            assert!(empty <= units);
            // Each further passage of a section or row holds at least one word (or part of one)
            // the one before did not.
            let most = units + visible;
            assert!(
                passages.len() <= most,
                "{} passages, at most {most}",
                passages.len()
            );
            for p in &passages {
                assert!(!p.id.is_empty());
                assert!(!p.text.trim().is_empty(), "an empty passage");
                assert!(
                    p.text.chars().count() <= cut.max_chars,
                    "a passage too long"
                );
                assert!(
                    embedder.tokens(&p.text).len() <= cut.max_tokens,
                    "a passage of too many tokens"
                );
                assert!(p.title.len() <= MAX_TITLE_BYTES, "a title too long");
                assert_eq!(crate::meta::check_kind(&p.kind), Ok(()));
                if let Some(url) = &p.url {
                    assert_eq!(check_url(url), Ok(()));
                }
                assert_eq!(check_fields(&p.fields), Ok(()));
                // Every document passage links back; a row's only by its own `url`.
                assert!(p.url.is_some() || format.is_table());
            }
        }
        Err(why) => refused_at_a_row(&why, format, lines),
    }
}

/// A file refused is a table, and the refusal says where: the line of the file its first bad
/// row (or its header) starts on; or an HTML document nested too deep. The other readers
/// take any text.
fn refused_at_a_row(why: &str, format: Format, lines: usize) {
    let at = |prefix: &str| {
        why.strip_prefix(prefix)
            .and_then(|rest| rest.split(':').next())
            .and_then(|n| n.parse::<usize>().ok())
    };
    match format {
        Format::Csv | Format::Jsonl => {
            let line = at("line ");
            assert!(
                line.is_some_and(|n| (1..=lines).contains(&n)),
                "{why} ({lines} lines)"
            );
        }
        Format::Html => assert_eq!(
            why,
            format!("elements nested over {} deep", crate::html_depth::MAX_DEPTH)
        ),
        Format::Markdown => assert!(why.starts_with("front matter: "), "{why}"),
        _ => panic!("a document refused: {why}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ingest_file_cases() {
        let fuzz = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../fuzz");
        let mut ran = 0;
        for kind in ["seeds", "regressions"] {
            let Ok(entries) = std::fs::read_dir(fuzz.join(kind).join("ingest_file")) else {
                continue;
            };
            for entry in entries {
                let path = entry.expect("a readable folder").path();
                let bytes = std::fs::read(&path).expect("a readable case");
                let outcome = std::panic::catch_unwind(|| ingest_file(&bytes));
                assert!(outcome.is_ok(), "ingest_file: {} failed", path.display());
                ran += 1;
            }
        }
        assert!(ran > 0, "no cases for ingest_file");
    }
}
