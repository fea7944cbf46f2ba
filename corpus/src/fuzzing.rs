//! What the `corpus_file` fuzz target checks (`fuzz/`, run by `cargo fuzz`: `fuzz/run.sh`): the
//! corpus loader on any file — plain JSON Lines or gzip — never panics, holds its bound on the
//! JSON Lines however the file inflates, accepts only documents within every bound, and names
//! the line of what it refuses. `cargo test` runs the kept cases on stable
//! (`fuzz/seeds/corpus_file/`, `fuzz/regressions/corpus_file/`).

use std::collections::HashSet;

use crate::document::{
    MAX_ID_BYTES, MAX_TEXT_CHARS, MAX_TITLE_BYTES, load_documents, read_corpus_within,
    starts_like_json_lines,
};
use crate::{CorpusError, MAX_KIND_BYTES};

/// The bound on the JSON Lines while fuzzing: `--corpus-max-mib` goes up to 4 GiB
/// ([`crate::MAX_CORPUS_BYTES`]), which no input of the fuzzer's 64 KiB can reach, so the
/// bound's logic is fuzzed at 1 MiB (a gzip input may inflate about a thousandfold).
pub const FUZZ_MAX_BYTES: u64 = 1 << 20;

/// The bytes as a corpus file: read (decompressed if gzip) within [`FUZZ_MAX_BYTES`], then
/// loaded; and loaded as JSON Lines as they are.
///
/// # Panics
/// When the loader misbehaves (or a temporary file cannot be written).
pub fn corpus_file(data: &[u8]) {
    let file = tempfile::NamedTempFile::new().expect("a temporary file");
    std::fs::write(file.path(), data).expect("written");
    let gzip = data.starts_with(&[0x1f, 0x8b]);
    match read_corpus_within(Some(file.path()), FUZZ_MAX_BYTES) {
        Ok(corpus) => {
            assert!(
                corpus.jsonl.len() as u64 <= FUZZ_MAX_BYTES,
                "over the bound"
            );
            if !gzip {
                assert_eq!(corpus.jsonl, data, "plain bytes changed");
            }
            documents(&corpus.jsonl);
        }
        // A broken gzip stream.
        Err(CorpusError::Read { .. }) => assert!(gzip, "plain bytes unreadable"),
        // Text that is not JSON Lines (Markdown, …): told to make a corpus of it.
        Err(CorpusError::NotACorpus { folder, .. }) => {
            assert!(!folder, "a file taken for a folder");
            assert!(
                gzip || !starts_like_json_lines(data),
                "JSON Lines refused as no corpus"
            );
        }
        // Past the bound, plain or inflated.
        Err(CorpusError::TooLarge { limit_mib }) => {
            assert_eq!(limit_mib, FUZZ_MAX_BYTES >> 20);
            assert!(
                gzip || data.len() as u64 > FUZZ_MAX_BYTES,
                "plain bytes refused"
            );
        }
        Err(other) => panic!("refused as {other}, not as unreadable or too large"),
    }
    documents(data);
}

/// JSON Lines loaded: documents within every bound, with ids of their own, at most one a line;
/// or refused at a line of the input.
fn documents(jsonl: &[u8]) {
    let lines = jsonl.split(|b| *b == b'\n').count();
    match load_documents(jsonl) {
        Ok(docs) => {
            assert!(docs.len() <= lines);
            let mut ids = HashSet::new();
            for doc in &docs {
                assert!(
                    (1..=MAX_ID_BYTES).contains(&doc.id.len()),
                    "id {:?}",
                    doc.id
                );
                assert!(ids.insert(doc.id.as_str()), "id {:?} twice", doc.id);
                assert!(
                    (1..=MAX_KIND_BYTES).contains(&doc.kind.len())
                        && !doc.kind.chars().any(char::is_control),
                    "kind {:?}",
                    doc.kind
                );
                assert!(doc.title.len() <= MAX_TITLE_BYTES);
                assert!(doc.text.chars().count() <= MAX_TEXT_CHARS);
            }
        }
        Err(error @ CorpusError::BadDocument { line, .. }) => {
            assert!((1..=lines).contains(&line), "line {line} of {lines}");
            let message = error.to_string();
            assert!(
                message.starts_with(&format!("corpus line {line}: ")),
                "{message}"
            );
            // Nothing of the line is quoted at length: a refusal may reach a caller who may not
            // read the file.
            assert!(message.len() <= 512, "a message of {} bytes", message.len());
        }
        Err(other) => panic!("refused as {other}, not at a line"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn corpus_file_cases() {
        let fuzz = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../fuzz");
        let mut ran = 0;
        for kind in ["seeds", "regressions"] {
            let Ok(entries) = std::fs::read_dir(fuzz.join(kind).join("corpus_file")) else {
                continue;
            };
            for entry in entries {
                let path = entry.expect("a readable folder").path();
                let bytes = std::fs::read(&path).expect("a readable case");
                let outcome = std::panic::catch_unwind(|| corpus_file(&bytes));
                assert!(outcome.is_ok(), "corpus_file: {} failed", path.display());
                ran += 1;
            }
        }
        assert!(ran > 0, "no cases for corpus_file");
    }
}
