//! Builds over builds (the manifest, reuse of unchanged files), files in other encodings, and
//! ids from the sources' common root.

use std::path::{Path, PathBuf};

use crate::build::{BuildArgs, BuildError, build};
use crate::summary::{Changes, Summary};

fn write(path: &Path, content: impl AsRef<[u8]>) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, content).unwrap();
}

fn lines(out: &Path) -> Vec<serde_json::Value> {
    std::fs::read_to_string(out)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

fn ids(out: &Path) -> Vec<String> {
    lines(out)
        .iter()
        .map(|l| l["id"].as_str().unwrap().to_owned())
        .collect()
}

fn text_of(out: &Path, id: &str) -> String {
    lines(out)
        .iter()
        .find(|l| l["id"] == id)
        .unwrap_or_else(|| panic!("no {id} in {:?}", ids(out)))["text"]
        .as_str()
        .unwrap()
        .to_owned()
}

/// A folder of `n` Markdown pages and a JSON Lines table with a bad row.
fn docs(dir: &Path, n: usize) -> PathBuf {
    let src = dir.join("docs");
    for i in 0..n {
        write(
            &src.join(format!("guide/page{i}.md")),
            format!(
                "# Page {i}\n\n## Setup\n\nPage {i} says how to set it up.\n\n## Use\n\nThen use it.\n"
            ),
        );
    }
    write(
        &src.join("faq.jsonl"),
        "{\"id\": \"q1\", \"text\": \"one\"}\nnot json\n{\"id\": \"q2\", \"text\": \"\"}\n",
    );
    src
}

fn args(src: &Path, out: &Path) -> BuildArgs {
    BuildArgs {
        skip_bad_rows: true,
        ..BuildArgs::one(src, out)
    }
}

fn changes(summary: &Summary) -> (usize, usize, usize, usize, usize) {
    let c = &summary.changes;
    (c.added, c.changed, c.removed, c.reused, c.passages_reused)
}

/// A rebuild copies an unchanged file's passages and reads only what changed; a removed file's
/// passages go; the output is what a full build of the same files writes, byte for byte.
#[test]
fn a_rebuild_reuses_unchanged_files_and_drops_removed_ones() {
    let tmp = tempfile::tempdir().unwrap();
    let src = docs(tmp.path(), 4);
    let out = tmp.path().join("corpus.jsonl");
    let first = build(&args(&src, &out), false).unwrap();
    assert!(
        first
            .changes
            .full
            .as_deref()
            .unwrap()
            .starts_with("no manifest"),
        "{first}"
    );
    assert!(crate::manifest::path_of(&out).is_file());

    // Nothing changed: every file copied, nothing read.
    let again = build(&args(&src, &out), false).unwrap();
    assert_eq!(again.changes.full, None, "{again}");
    assert_eq!(changes(&again), (0, 0, 0, 5, first.passages));
    assert_eq!(again.sha256, first.sha256);
    // The table's counts come along with its passages.
    assert_eq!((again.bad_rows, again.empty_rows), (2, 0));
    assert_eq!((first.bad_rows, first.empty_rows), (2, 0));

    // One page changed, one removed, one added.
    write(
        &src.join("guide/page1.md"),
        "# Page 1\n\n## Setup\n\nA new way to set it up.\n",
    );
    std::fs::remove_file(src.join("guide/page2.md")).unwrap();
    write(&src.join("guide/zeta.md"), "# Zeta\n\nNew here.\n");
    let rebuilt = build(&args(&src, &out), false).unwrap();
    assert_eq!(changes(&rebuilt), (1, 1, 1, 3, 2 * 2 + 1), "{rebuilt}");
    let shown = rebuilt.to_string();
    assert!(
        shown.contains("reused 3 unchanged files (5 passages) from the last build; 1 changed, 1 added, 1 removed"),
        "{shown}"
    );
    assert_eq!(
        text_of(&out, "guide/page1.md#setup"),
        "A new way to set it up."
    );
    assert!(!ids(&out).iter().any(|id| id.starts_with("guide/page2.md")));
    assert!(ids(&out).iter().any(|id| id.starts_with("guide/zeta.md")));

    let rebuilt_bytes = std::fs::read(&out).unwrap();
    let full = tmp.path().join("full.jsonl");
    let from_scratch = build(&args(&src, &full), false).unwrap();
    assert_eq!(std::fs::read(&full).unwrap(), rebuilt_bytes);
    assert_eq!(from_scratch.sha256, rebuilt.sha256);

    // --full reads all again, and says why.
    let forced = build(
        &BuildArgs {
            full: true,
            ..args(&src, &out)
        },
        false,
    )
    .unwrap();
    assert_eq!(forced.changes.full.as_deref(), Some("--full"));
    assert_eq!(changes(&forced), (0, 0, 0, 0, 0));
    assert_eq!(std::fs::read(&out).unwrap(), rebuilt_bytes);
}

/// The passages of a reused file are copied from the last output, not made again: a file
/// whose content is the same is not read past its hash, so an output line the manifest
/// covers comes back as it was (here: with a text that no reader would make of the file).
#[test]
fn an_unchanged_files_passages_are_copied_from_the_last_output() {
    let tmp = tempfile::tempdir().unwrap();
    let src = docs(tmp.path(), 2);
    let out = tmp.path().join("corpus.jsonl");
    build(&args(&src, &out), false).unwrap();
    // Rewrite the output and its manifest's hash as a build that made other text would have.
    let old = std::fs::read_to_string(&out).unwrap();
    let marked = old.replace("Page 0 says how", "Page 0 SAYS how");
    assert_eq!(marked.len(), old.len());
    std::fs::write(&out, &marked).unwrap();
    let manifest = crate::manifest::path_of(&out);
    let (old_hash, _) = crate::manifest::output_hash(&std::fs::File::open(&out).unwrap()).unwrap();
    let text = std::fs::read_to_string(&manifest).unwrap();
    let header: serde_json::Value = serde_json::from_str(text.lines().next().unwrap()).unwrap();
    let text = text.replace(header["output_xxh3"].as_str().unwrap(), &old_hash);
    std::fs::write(&manifest, text).unwrap();

    let again = build(&args(&src, &out), false).unwrap();
    assert_eq!(again.changes.reused, 3, "{again}");
    assert_eq!(
        text_of(&out, "guide/page0.md#setup"),
        "Page 0 SAYS how to set it up."
    );
}

/// Other settings, an output that is not the one the manifest describes, or a manifest that
/// is not one: every file is read again, and the summary says why.
#[test]
fn other_settings_or_a_stale_manifest_rebuild_everything() {
    let tmp = tempfile::tempdir().unwrap();
    let src = docs(tmp.path(), 2);
    let out = tmp.path().join("corpus.jsonl");
    build(&args(&src, &out), false).unwrap();

    let other = BuildArgs {
        max_chars: 500,
        ..args(&src, &out)
    };
    let summary = build(&other, false).unwrap();
    assert_eq!(
        summary.changes,
        Changes {
            full: Some("the settings changed since the last build".into()),
            ..Changes::default()
        }
    );
    assert!(
        summary
            .to_string()
            .contains("every file read: the settings changed since the last build")
    );
    // The manifest is now of those settings: the same again reuses all.
    assert_eq!(build(&other, false).unwrap().changes.reused, 3);

    std::fs::write(&out, "{}\n").unwrap();
    let summary = build(&other, false).unwrap();
    assert!(
        summary
            .changes
            .full
            .as_deref()
            .unwrap()
            .ends_with("is not the output its manifest describes"),
        "{summary}"
    );

    std::fs::write(crate::manifest::path_of(&out), "garbage").unwrap();
    let summary = build(&other, false).unwrap();
    assert!(
        summary
            .changes
            .full
            .as_deref()
            .unwrap()
            .ends_with("not a manifest"),
        "{summary}"
    );
}

/// Reused passages' ids are checked with the rest: a changed table that now repeats an id of
/// an unchanged one stops the build.
#[test]
fn reused_ids_are_still_checked_for_repeats() {
    let tmp = tempfile::tempdir().unwrap();
    let src = tmp.path().join("src");
    write(&src.join("a.jsonl"), "{\"id\": \"x\", \"text\": \"one\"}\n");
    write(&src.join("b.jsonl"), "{\"id\": \"y\", \"text\": \"two\"}\n");
    let out = tmp.path().join("corpus.jsonl");
    build(&args(&src, &out), false).unwrap();
    write(&src.join("b.jsonl"), "{\"id\": \"x\", \"text\": \"two\"}\n");
    let error = build(&args(&src, &out), false).unwrap_err();
    assert!(
        matches!(&error, BuildError::DuplicateId { id, .. } if id == "x"),
        "{error}"
    );
}

/// A Latin-1 page, a UTF-16 one with its byte-order mark, an HTML page that declares its
/// encoding and a UTF-16 table are read, their letters right; a binary file is passed over.
#[test]
fn files_in_other_encodings_are_read() {
    let tmp = tempfile::tempdir().unwrap();
    let src = tmp.path().join("src");
    write(
        &src.join("latin1.md"),
        b"Le caf\xe9 est pr\xeat, d\xe9j\xe0 chaud.\n",
    );
    let utf16 = |text: &str| {
        let mut bytes = vec![0xff, 0xfe];
        for unit in text.encode_utf16() {
            bytes.extend(unit.to_le_bytes());
        }
        bytes
    };
    write(&src.join("wide.txt"), utf16("Grüße aus Köln.\r\n"));
    write(
        &src.join("page.html"),
        b"<html><head><meta charset=\"iso-8859-1\"><title>T</title></head><body><p>na\xefve</p></body></html>",
    );
    write(&src.join("rows.csv"), utf16("id,text\nr1,crème brûlée\n"));
    write(&src.join("binary.txt"), b"\x00\x9f\x92\x96 not text");
    let out = tmp.path().join("corpus.jsonl");
    let summary = build(&args(&src, &out), false).unwrap();
    assert_eq!(text_of(&out, "latin1.md"), "Le café est prêt, déjà chaud.");
    assert_eq!(text_of(&out, "wide.txt"), "Grüße aus Köln.");
    assert_eq!(text_of(&out, "page.html"), "naïve");
    assert_eq!(text_of(&out, "r1"), "crème brûlée");
    assert!(
        summary
            .skipped
            .iter()
            .any(|s| s.path.ends_with("binary.txt") && s.why.starts_with("not text")),
        "{summary}"
    );
    let shown = summary.to_string();
    assert!(
        shown.contains("converted to UTF-8: 3 files (1 UTF-16LE, 2 windows-1252)"),
        "{shown}"
    );
}

/// Files given directly from two folders get ids from the folders' common root, so two
/// README.md stay apart; one folder, or one file, keeps the ids it always had.
#[test]
fn ids_are_paths_from_the_sources_common_root() {
    let tmp = tempfile::tempdir().unwrap();
    let (a, b) = (
        tmp.path().join("a/README.md"),
        tmp.path().join("b/README.md"),
    );
    write(&a, "First.\n");
    write(&b, "Second.\n");
    let out = tmp.path().join("corpus.jsonl");
    build(
        &BuildArgs {
            sources: vec![a.clone(), b.clone()],
            ..BuildArgs::one(&a, &out)
        },
        false,
    )
    .unwrap();
    assert_eq!(ids(&out), ["a/README.md", "b/README.md"]);

    build(&BuildArgs::one(&a, &out), false).unwrap();
    assert_eq!(ids(&out), ["README.md"]);
    build(&BuildArgs::one(&tmp.path().join("a"), &out), false).unwrap();
    assert_eq!(ids(&out), ["README.md"]);
    // A folder and a file inside another: both under their common root.
    let nested = tmp.path().join("a/deep/notes.txt");
    write(&nested, "Deep.\n");
    build(
        &BuildArgs {
            sources: vec![tmp.path().join("b"), nested.clone()],
            ..BuildArgs::one(&nested, &out)
        },
        false,
    )
    .unwrap();
    assert_eq!(ids(&out), ["b/README.md", "a/deep/notes.txt"]);
}

/// An output inside a source folder is the build's own: the next build passes over it (by its
/// identity, so a hard link to it too) instead of reading its lines back as a table.
#[test]
fn an_output_inside_its_source_is_never_read_back() {
    let tmp = tempfile::tempdir().unwrap();
    let src = docs(tmp.path(), 3);
    let out = src.join("corpus.jsonl");
    let first = build(&args(&src, &out), false).unwrap();
    let written = ids(&out);
    std::fs::hard_link(&out, src.join("guide/copy.jsonl")).unwrap();
    for _ in 0..2 {
        let again = build(&args(&src, &out), false).unwrap();
        assert_eq!(again.passages, first.passages);
        assert_eq!(ids(&out), written);
        let own: Vec<_> = again
            .skipped
            .iter()
            .filter(|s| s.why.contains("own output"))
            .map(|s| s.path.strip_prefix(&src).unwrap().to_owned())
            .collect();
        assert_eq!(
            own,
            [
                PathBuf::from("corpus.jsonl"),
                PathBuf::from("guide/copy.jsonl")
            ]
        );
        // The next round's output is a new file (renamed over): link it again.
        std::fs::remove_file(src.join("guide/copy.jsonl")).unwrap();
        std::fs::hard_link(&out, src.join("guide/copy.jsonl")).unwrap();
    }
    // Given as the source itself, it is passed over too: nothing is left to read.
    let error = build(&args(&out, &out), false).unwrap_err();
    assert!(matches!(error, BuildError::Empty(_)), "{error}");
}
