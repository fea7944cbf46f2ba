use std::io::Read;
use std::path::Path;

use serde::Deserialize;

use super::CorpusError;
use super::metadata::{Fields, check_fields, check_kind, check_url};
use super::regular_file::RegularFile;

/// The corpus shipped with turnstile (see `corpus/README.md`), embedded so `serve` needs no files.
static EMBEDDED_CORPUS: &[u8] = include_bytes!(concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/python-summaries.jsonl"
));

/// The name the embedded corpus is reported under.
pub const EMBEDDED_CORPUS_NAME: &str = "embedded:python-summaries.jsonl";

/// Bounds on a document, enforced at load: an oversized corpus line is refused, not truncated.
pub(crate) const MAX_ID_BYTES: usize = 512;
pub(crate) const MAX_TITLE_BYTES: usize = 1024;
pub(crate) const MAX_TEXT_CHARS: usize = 2000;
/// The `kind` of a document that names none.
pub const DEFAULT_KIND: &str = "document";

/// One corpus document, as in the JSON Lines file.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Document {
    /// Unique id, e.g. `json.dumps` or `topic:assert`.
    pub id: String,
    /// What the document is, in the corpus's own words: free text of 1..=[`crate::MAX_KIND_BYTES`]
    /// bytes without control characters ([`DEFAULT_KIND`] when the line has none). The shipped
    /// corpus uses `module`, `class`, `function`, `method` and `topic`.
    #[serde(default = "default_kind")]
    pub kind: String,
    /// Id, " — ", and the first sentence.
    pub title: String,
    /// The cleaned docstring.
    pub text: String,
    /// Where the document can be read, for an answer to link back: `http`, `https` or a relative
    /// reference such as `guide/cancel.html#refunds` (see [`check_url`]); returned with each
    /// source, never searched.
    #[serde(default)]
    pub url: Option<String>,
    /// The document's own fields (front matter, a row's other columns): flat and bounded (see
    /// [`check_fields`]); returned with each source, never searched. An empty object is none.
    #[serde(default)]
    pub fields: Option<Fields>,
}

fn default_kind() -> String {
    DEFAULT_KIND.to_owned()
}

/// The raw bytes of a corpus (gzip-compressed or plain JSON Lines) and where they came from.
pub struct CorpusBytes {
    /// Display name: the path, or [`EMBEDDED_CORPUS_NAME`].
    pub name: String,
    /// The decompressed JSON Lines.
    pub jsonl: Vec<u8>,
}

/// Largest corpus, in bytes of JSON Lines (after decompression): it is read whole into memory
/// before it is indexed. A million passages of the mixed benchmark corpus take 471 MB.
pub const MAX_CORPUS_BYTES: u64 = 4 << 30;

/// Reads the corpus at `path` (`.gz` is decompressed), or the embedded one when `path` is `None`.
/// The file must be a regular file (not a device or a pipe) of at most [`MAX_CORPUS_BYTES`], and
/// so must its decompressed JSON Lines.
pub fn read_corpus(path: Option<&Path>) -> Result<CorpusBytes, CorpusError> {
    read_corpus_within(path, MAX_CORPUS_BYTES)
}

/// [`read_corpus`] under a bound of `max_bytes` (at most [`MAX_CORPUS_BYTES`]) of JSON Lines,
/// decompressed: past it, [`CorpusError::TooLarge`], found as the bytes come (a gzip file is
/// never decompressed past it).
pub fn read_corpus_within(path: Option<&Path>, max_bytes: u64) -> Result<CorpusBytes, CorpusError> {
    let max_bytes = max_bytes.min(MAX_CORPUS_BYTES);
    let too_large = || CorpusError::TooLarge {
        limit_mib: max_bytes >> 20,
    };
    let Some(path) = path else {
        return Ok(CorpusBytes {
            name: EMBEDDED_CORPUS_NAME.to_owned(),
            jsonl: EMBEDDED_CORPUS.to_vec(),
        });
    };
    let error = |source| CorpusError::Read {
        path: path.to_owned(),
        source,
    };
    let not_a_corpus = |folder| CorpusError::NotACorpus {
        path: path.to_owned(),
        folder,
    };
    if std::fs::metadata(path).is_ok_and(|m| m.is_dir()) {
        return Err(not_a_corpus(true));
    }
    let file = match RegularFile::open(path, max_bytes) {
        Err(e) if e.kind() == std::io::ErrorKind::FileTooLarge => return Err(too_large()),
        opened => opened.map_err(error)?,
    };
    read_regular(file, path, max_bytes)
}

/// [`read_corpus_within`] of a file already opened (`opened`: the open's outcome) that `path`
/// names — an admin swap opens under its root and reads only through what it opened.
pub fn read_corpus_from(
    opened: std::io::Result<std::fs::File>,
    path: &Path,
    max_bytes: u64,
) -> Result<CorpusBytes, CorpusError> {
    let max_bytes = max_bytes.min(MAX_CORPUS_BYTES);
    let error = |source| CorpusError::Read {
        path: path.to_owned(),
        source,
    };
    let file = opened.map_err(error)?;
    if file.metadata().is_ok_and(|m| m.is_dir()) {
        return Err(CorpusError::NotACorpus {
            path: path.to_owned(),
            folder: true,
        });
    }
    let file = match RegularFile::of(file, max_bytes) {
        Err(e) if e.kind() == std::io::ErrorKind::FileTooLarge => {
            return Err(CorpusError::TooLarge {
                limit_mib: max_bytes >> 20,
            });
        }
        opened => opened.map_err(error)?,
    };
    read_regular(file, path, max_bytes)
}

/// A corpus file, opened: its JSON Lines (decompressed if gzip), within `max_bytes`.
fn read_regular(
    file: RegularFile,
    path: &Path,
    max_bytes: u64,
) -> Result<CorpusBytes, CorpusError> {
    let too_large = || CorpusError::TooLarge {
        limit_mib: max_bytes >> 20,
    };
    let error = |source| CorpusError::Read {
        path: path.to_owned(),
        source,
    };
    let not_a_corpus = |folder| CorpusError::NotACorpus {
        path: path.to_owned(),
        folder,
    };
    let reported = file.len();
    let mut file = std::io::BufReader::new(file);
    let gzip = std::io::BufRead::fill_buf(&mut file)
        .map_err(error)?
        .starts_with(&[0x1f, 0x8b]);
    // Decompressed as it is read: the compressed bytes are never held whole beside the JSON
    // Lines, which are bounded as they come (and so is what is reserved for them).
    let mut jsonl = Vec::with_capacity(if gzip {
        reported.saturating_mul(4).min(1 << 30).min(max_bytes) as usize
    } else {
        reported as usize
    });
    let read = if gzip {
        // Every member (`cat a.gz b.gz`, bgzip's blocks), to the end of the file: bytes after
        // the last member that are no gzip member are an error, not ignored.
        flate2::read::MultiGzDecoder::new(file)
            .take(max_bytes + 1)
            .read_to_end(&mut jsonl)
    } else {
        file.read_to_end(&mut jsonl)
    };
    read.map_err(error)?;
    if jsonl.len() as u64 > max_bytes {
        return Err(too_large());
    }
    if jsonl.starts_with(b"\0asm") {
        return Err(CorpusError::PluginGivenAsCorpus {
            path: path.to_owned(),
        });
    }
    if !starts_like_json_lines(&jsonl) {
        return Err(not_a_corpus(false));
    }
    Ok(CorpusBytes {
        name: path.display().to_string(),
        jsonl,
    })
}

/// Whether `bytes` may be JSON Lines of documents: nothing but white space, or a `{` first
/// (after a UTF-8 byte order mark, if any). Markdown, HTML or plain text given as a corpus is
/// told what to do (`corpus build`) instead of a JSON parser's complaint about its first line.
pub(crate) fn starts_like_json_lines(bytes: &[u8]) -> bool {
    let bytes = bytes.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(bytes);
    bytes
        .iter()
        .find(|b| !b.is_ascii_whitespace())
        .is_none_or(|b| *b == b'{')
}

/// Parses JSON Lines into documents, checking every bound and that ids are unique.
pub fn load_documents(jsonl: &[u8]) -> Result<Vec<Document>, CorpusError> {
    let mut docs = Vec::new();
    let mut seen = std::collections::HashMap::new();
    for (i, line) in jsonl.split(|b| *b == b'\n').enumerate() {
        if line.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        let bad = |reason: String| CorpusError::BadDocument {
            line: i + 1,
            reason,
        };
        let mut doc: Document = serde_json::from_slice(line).map_err(|e| bad(json_problem(&e)))?;
        if doc.id.is_empty() || doc.id.len() > MAX_ID_BYTES {
            return Err(bad(format!("id must be 1..={MAX_ID_BYTES} bytes")));
        }
        check_kind(&doc.kind).map_err(bad)?;
        if doc.title.len() > MAX_TITLE_BYTES {
            return Err(bad(format!("title over {MAX_TITLE_BYTES} bytes")));
        }
        if doc.text.chars().count() > MAX_TEXT_CHARS {
            return Err(bad(format!("text over {MAX_TEXT_CHARS} characters")));
        }
        if let Some(url) = &doc.url {
            check_url(url).map_err(bad)?;
        }
        if doc.fields.as_ref().is_some_and(Fields::is_empty) {
            doc.fields = None;
        }
        if let Some(fields) = &doc.fields {
            check_fields(fields).map_err(bad)?;
        }
        if let Some(first) = seen.insert(doc.id.clone(), i + 1) {
            return Err(bad(format!("the same id as line {first}")));
        }
        docs.push(doc);
    }
    Ok(docs)
}

/// What is wrong with a line that is not a document, in words that quote nothing of it (an
/// error can reach someone who may not read the file: serde's messages quote values and keys).
fn json_problem(error: &serde_json::Error) -> String {
    use serde_json::error::Category;
    let column = error.column();
    match error.classify() {
        Category::Syntax | Category::Io => format!("not valid JSON (column {column})"),
        Category::Eof => "not valid JSON (it ends too early)".to_owned(),
        Category::Data => format!(
            "not a document {{\"id\", \"kind\"?, \"title\", \"text\", \"url\"?, \"fields\"?}} (strings, and an object of fields): a field is missing, unknown, repeated or of the wrong type (column {column})"
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::MAX_KIND_BYTES;

    #[test]
    fn embedded_corpus_loads() {
        let bytes = read_corpus(None).unwrap();
        let docs = load_documents(&bytes.jsonl).unwrap();
        assert!(docs.len() > 1000, "only {} documents", docs.len());
        assert!(docs.iter().any(|d| d.id == "argparse"));
    }

    #[test]
    fn a_bad_line_is_named_by_its_number_and_never_quoted() {
        let good = r#"{"id":"canary-id","title":"t","text":"x"}"#;
        for (jsonl, line, says) in [
            (format!("{good}\n\"canary-line\""), 2, "not a document"),
            (
                r#"{"id":"a","title":"t","text":"x","canary-key":1}"#.to_owned(),
                1,
                "unknown",
            ),
            (format!("{good}\n\n{good}"), 3, "the same id as line 1"),
            ("{\"id\": canary".to_owned(), 1, "not valid JSON"),
        ] {
            let err = load_documents(jsonl.as_bytes()).unwrap_err().to_string();
            assert!(!err.contains("canary"), "{err}");
            assert!(
                err.contains(&format!("line {line}:")) && err.contains(says),
                "{err}"
            );
        }
    }

    /// A gzip corpus of several members (`cat a.gz b.gz`, bgzip) is read whole, every member's
    /// documents; bytes after the last member that are not gzip are refused, not ignored.
    #[test]
    fn every_member_of_a_gzip_corpus_is_read_and_nothing_after_them_is_ignored() {
        use std::io::Write;
        let tmp = tempfile::tempdir().unwrap();
        let member = |jsonl: &str| {
            let mut encoder =
                flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
            encoder.write_all(jsonl.as_bytes()).unwrap();
            encoder.finish().unwrap()
        };
        let a = r#"{"id":"a","title":"A","text":"first member"}"#.to_owned() + "\n";
        let b = r#"{"id":"b","title":"B","text":"second member"}"#.to_owned() + "\n";
        let path = tmp.path().join("two.jsonl.gz");
        std::fs::write(&path, [member(&a), member(&b)].concat()).unwrap();
        let read = read_corpus_within(Some(&path), 1 << 20).unwrap();
        assert_eq!(read.jsonl, format!("{a}{b}").as_bytes());
        let trailing = tmp.path().join("trailing.jsonl.gz");
        std::fs::write(&trailing, [member(&a), b"not gzip".to_vec()].concat()).unwrap();
        assert!(read_corpus_within(Some(&trailing), 1 << 20).is_err());
    }

    /// The bound on the JSON Lines holds for a gzip file however small it is: a "bomb" that
    /// inflates past it is refused once the bound is passed, not decompressed whole (the 4 GiB
    /// of `--corpus-max-mib`'s ceiling, checked here at 1 MiB: the same code).
    #[test]
    fn a_gzip_bomb_is_refused_at_the_bound() {
        use std::io::Write;
        const BOUND: u64 = 1 << 20;
        let tmp = tempfile::tempdir().unwrap();
        let gzip = |name: &str, bytes: u64| {
            let path = tmp.path().join(name);
            let mut encoder = flate2::write::GzEncoder::new(
                std::fs::File::create(&path).unwrap(),
                flate2::Compression::best(),
            );
            // One line again and again: it compresses about 500 to 1.
            let line = br#"{"id":"a","title":"t","text":"x"}"#;
            let mut written = 0;
            while written < bytes {
                let chunk = &line[..line.len().min((bytes - written) as usize)];
                encoder.write_all(chunk).unwrap();
                written += chunk.len() as u64;
            }
            encoder.finish().unwrap();
            path
        };
        let bomb = gzip("bomb.jsonl.gz", 64 * BOUND);
        assert!(std::fs::metadata(&bomb).unwrap().len() < BOUND / 4);
        assert!(matches!(
            read_corpus_within(Some(&bomb), BOUND),
            Err(CorpusError::TooLarge { limit_mib: 1 })
        ));
        let at_bound = gzip("at-bound.jsonl.gz", BOUND);
        assert_eq!(
            read_corpus_within(Some(&at_bound), BOUND)
                .unwrap()
                .jsonl
                .len() as u64,
            BOUND
        );
        let one_more = gzip("one-more.jsonl.gz", BOUND + 1);
        assert!(matches!(
            read_corpus_within(Some(&one_more), BOUND),
            Err(CorpusError::TooLarge { .. })
        ));
        // A plain file past the bound is refused by its size.
        let plain = tmp.path().join("plain.jsonl");
        std::fs::write(&plain, vec![b' '; BOUND as usize + 1]).unwrap();
        assert!(matches!(
            read_corpus_within(Some(&plain), BOUND),
            Err(CorpusError::TooLarge { .. })
        ));
    }

    #[test]
    fn bad_lines_are_refused_with_their_line_number() {
        let err = load_documents(b"{\"id\":\"a\",\"kind\":\"module\",\"title\":\"a\",\"text\":\"\"}\n{\"id\":\"a\",\"kind\":\"module\",\"title\":\"a\",\"text\":\"\"}\n").unwrap_err();
        assert!(
            matches!(err, CorpusError::BadDocument { line: 2, .. }),
            "{err}"
        );
        for kind in [
            "\"\"",
            "\"a\\nb\"",
            &format!("\"{}\"", "k".repeat(MAX_KIND_BYTES + 1)),
        ] {
            let line = format!(r#"{{"id":"b","kind":{kind},"title":"","text":""}}"#);
            let err = load_documents(format!("\n{line}").as_bytes()).unwrap_err();
            assert!(
                matches!(&err, CorpusError::BadDocument { line: 2, reason } if reason.contains("kind must be")),
                "{kind}: {err}"
            );
        }
    }

    #[test]
    fn a_url_and_fields_load_checked_and_an_empty_object_is_none() {
        let docs = load_documents(
            concat!(
                r#"{"id":"a","title":"A","text":"x","url":"https://h.example/a#b","fields":{"tags":["x","y"],"n":1}}"#,
                "\n",
                r#"{"id":"b","title":"B","text":"x","url":"b.html","fields":{}}"#,
                "\n",
                r#"{"id":"c","title":"C","text":"x"}"#,
            )
            .as_bytes(),
        )
        .unwrap();
        assert_eq!(docs[0].url.as_deref(), Some("https://h.example/a#b"));
        assert_eq!(
            serde_json::Value::Object(docs[0].fields.clone().unwrap()),
            serde_json::json!({"tags": ["x", "y"], "n": 1})
        );
        assert_eq!(
            (docs[1].url.as_deref(), docs[1].fields.is_none()),
            (Some("b.html"), true)
        );
        assert_eq!(
            (docs[2].url.is_none(), docs[2].fields.is_none()),
            (true, true)
        );
        for (line, says) in [
            (
                r#"{"id":"d","title":"","text":"","url":"file:///etc/canary"}"#,
                "no other scheme",
            ),
            (r#"{"id":"d","title":"","text":"","url":""}"#, "url must be"),
            (
                r#"{"id":"d","title":"","text":"","fields":{"canary":{"x":1}}}"#,
                "a list of those",
            ),
            (
                r#"{"id":"d","title":"","text":"","fields":[1]}"#,
                "wrong type",
            ),
        ] {
            let err = load_documents(line.as_bytes()).unwrap_err().to_string();
            assert!(err.contains("line 1") && err.contains(says), "{err}");
            assert!(!err.contains("canary"), "{err}");
        }
    }

    #[test]
    fn any_kind_is_a_kind_and_none_is_the_default() {
        let docs = load_documents(
            format!(
                "{}\n{}\n{}",
                r#"{"id":"cancel","kind":"article","title":"Cancel","text":"Stop paying."}"#,
                r#"{"id":"faq","title":"FAQ","text":"Questions."}"#,
                format_args!(
                    r#"{{"id":"x","kind":"{}","title":"x","text":"x"}}"#,
                    "é".repeat(MAX_KIND_BYTES / 2)
                ),
            )
            .as_bytes(),
        )
        .unwrap();
        let kinds: Vec<&str> = docs.iter().map(|d| d.kind.as_str()).collect();
        assert_eq!(kinds[..2], ["article", DEFAULT_KIND]);
        assert_eq!(kinds[2].len(), MAX_KIND_BYTES);
    }
}
