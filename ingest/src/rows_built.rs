//! Tables (CSV, JSON Lines) built end to end: streamed past the 16 MiB a document may have, a
//! bad row named by its file and line and stopping the build (the old output kept), or left out
//! and counted under `--skip-bad-rows`.

use std::io::Write;
use std::path::{Path, PathBuf};

use crate::build::{BuildArgs, BuildError, build};

fn args(source: &Path, out: &Path, skip_bad_rows: bool) -> BuildArgs {
    BuildArgs {
        skip_bad_rows,
        ..BuildArgs::one(source, out)
    }
}

/// A folder with `out.jsonl` holding "kept", and the file `name` of `content`.
fn setup(name: &str, content: &[u8]) -> (tempfile::TempDir, PathBuf, PathBuf) {
    let tmp = tempfile::tempdir().unwrap();
    let source = tmp.path().join(name);
    std::fs::write(&source, content).unwrap();
    let out = tmp.path().join("out.jsonl");
    std::fs::write(&out, "kept").unwrap();
    (tmp, source, out)
}

fn files_in(dir: &Path) -> usize {
    std::fs::read_dir(dir).unwrap().count()
}

fn ids(out: &Path) -> Vec<String> {
    std::fs::read_to_string(out)
        .unwrap()
        .lines()
        .map(|l| {
            serde_json::from_str::<serde_json::Value>(l).unwrap()["id"]
                .as_str()
                .unwrap()
                .to_owned()
        })
        .collect()
}

/// Each kind of bad row stops the build by default, naming the file and the line the row
/// starts on; the old output is kept and nothing is left beside it.
#[test]
fn a_bad_row_fails_the_build_with_its_line() {
    let cases: [(&str, &[u8], usize, &str); 8] = [
        (
            "a.jsonl",
            b"{\"text\": \"one\"}\n\n{\"text\": \"two\"\n",
            3,
            "EOF while parsing",
        ),
        (
            "b.jsonl",
            b"{\"text\": \"one\"}\n[1, 2]\n",
            2,
            "not a JSON object",
        ),
        (
            "c.jsonl",
            b"{\"text\": \"one\"}\n{\"title\": \"t\"}\n",
            2,
            "no `text` field",
        ),
        (
            "d.jsonl",
            b"{\"text\": \"one\"}\n{\"text\": [\"x\"]}\n",
            2,
            "`text` must be a string",
        ),
        (
            "e.jsonl",
            b"{\"text\": \"one\"}\r\n{\"text\": \"caf\xe9\"}\r\n",
            2,
            "not UTF-8",
        ),
        // The second record spans lines 3 and 4: the bad one starts on line 5.
        (
            "f.csv",
            b"id,text\na,one\nb,\"two\nlines\"\nc,three,extra\n",
            5,
            "3 fields where the header has 2",
        ),
        ("g.csv", b"id,title\na,one\n", 1, "no `text` column"),
        ("h.csv", b"id,text\na,one\nb,caf\xe9\n", 3, "not UTF-8"),
    ];
    for (name, content, line, why) in cases {
        let (tmp, source, out) = setup(name, content);
        let error = build(&args(&source, &out, false), false).unwrap_err();
        match &error {
            BuildError::BadRow {
                path,
                line: at,
                why: said,
            } => {
                assert_eq!((path, *at), (&source, line), "{name}: {error}");
                assert!(said.contains(why), "{name}: {error}");
            }
            other => panic!("{name}: {other}"),
        }
        let message = error.to_string();
        assert!(
            message.starts_with(&format!("{}: line {line}: ", source.display()))
                && message.contains("--skip-bad-rows"),
            "{message}"
        );
        assert_eq!(std::fs::read_to_string(&out).unwrap(), "kept", "{name}");
        assert_eq!(files_in(tmp.path()), 2, "{name}: a temporary left behind");
    }
}

/// Under `--skip-bad-rows`, the good rows are written (ids by their own line or row, as
/// without bad rows) and the bad ones counted and listed by file and line.
#[test]
fn skip_bad_rows_keeps_the_good_ones_and_counts_the_rest() {
    let tmp = tempfile::tempdir().unwrap();
    let src = tmp.path().join("src");
    std::fs::create_dir(&src).unwrap();
    std::fs::write(
        src.join("a.jsonl"),
        "{\"text\": \"one\"}\nnot json\n{\"text\": \"three\"}\n{\"text\": 3.5, \"id\": {}}\n",
    )
    .unwrap();
    std::fs::write(
        src.join("b.csv"),
        b"\xef\xbb\xbfid,text\nx,first\ny,second,extra\nv,caf\xe9\nz,third\n",
    )
    .unwrap();
    let long_id = "i".repeat(600);
    std::fs::write(
        src.join("c.jsonl"),
        format!("{{\"id\": \"{long_id}\", \"text\": \"long id\"}}\n{{\"id\": \"ok\", \"text\": \"fine\"}}\n"),
    )
    .unwrap();
    let out = tmp.path().join("out.jsonl");
    let summary = build(&args(&src, &out, true), false).unwrap();
    assert_eq!(
        ids(&out),
        ["a.jsonl#row-1", "a.jsonl#row-3", "x", "z", "ok"]
    );
    assert_eq!(summary.bad_rows, 5);
    let listed: Vec<(String, usize)> = summary
        .bad_rows_listed
        .iter()
        .map(|b| {
            (
                b.path.file_name().unwrap().to_string_lossy().into_owned(),
                b.line,
            )
        })
        .collect();
    assert_eq!(
        listed,
        [
            ("a.jsonl".into(), 2),
            ("a.jsonl".into(), 4),
            ("b.csv".into(), 3),
            ("b.csv".into(), 4),
            ("c.jsonl".into(), 1)
        ]
    );
    assert!(
        summary.bad_rows_listed[4]
            .why
            .contains("an id over 512 bytes")
    );
    let shown = summary.to_string();
    assert!(shown.contains("bad rows left out: 5"), "{shown}");
    assert!(shown.contains("b.csv: line 4: not UTF-8"), "{shown}");
    assert!(
        shown.contains("b.csv: line 3: 3 fields where the header has 2"),
        "{shown}"
    );
    // Rows echo nothing of their content.
    assert!(
        !shown.contains("not json") && !shown.contains(&long_id),
        "{shown}"
    );

    // Without the flag, the first bad row of the first table stops the build.
    let error = build(&args(&src, &out, false), false).unwrap_err();
    assert!(
        matches!(&error, BuildError::BadRow { line: 2, path, .. } if path.ends_with("a.jsonl")),
        "{error}"
    );
}

/// Only the first bad rows are listed; the rest are counted, not kept.
#[test]
fn many_bad_rows_are_counted_not_listed() {
    let mut content = String::new();
    for i in 0..1000 {
        content.push_str(if i % 2 == 0 {
            "{\"text\": \"good\", \"id\": "
        } else {
            "{\"bad\" "
        });
        content.push_str(&format!("\"{i}\"}}\n"));
    }
    let (_tmp, source, out) = setup("rows.jsonl", content.as_bytes());
    let summary = build(&args(&source, &out, true), false).unwrap();
    assert_eq!((summary.passages, summary.bad_rows), (500, 500));
    assert_eq!(summary.bad_rows_listed.len(), crate::summary::MAX_LISTED);
    assert!(summary.to_string().contains("… and 480 more"));
}

/// A JSON Lines file over the 16 MiB a document may have is read, a row at a time; a line over
/// 16 MiB is a bad row, and the lines after it are read on.
#[test]
fn json_lines_over_16_mib_are_streamed() {
    let tmp = tempfile::tempdir().unwrap();
    let source = tmp.path().join("big.jsonl");
    let rows = 70_000;
    {
        let mut file = std::io::BufWriter::new(std::fs::File::create(&source).unwrap());
        let text = "word ".repeat(48);
        for i in 0..rows {
            writeln!(
                file,
                "{{\"id\": \"r{i}\", \"title\": \"Row {i}\", \"text\": \"{text}\"}}"
            )
            .unwrap();
        }
    }
    let size = std::fs::metadata(&source).unwrap().len();
    assert!(size > crate::files::MAX_FILE_BYTES, "{size}");
    let out = tmp.path().join("out.jsonl");
    let summary = build(&args(&source, &out, false), false).unwrap();
    assert_eq!(summary.passages, rows);
    assert_eq!(summary.read.get("jsonl"), Some(&1));
    assert!(summary.skipped.is_empty(), "{:?}", summary.skipped);

    // A line of 17 MiB between two good ones: left out under the flag, the next line read.
    let huge = tmp.path().join("huge.jsonl");
    {
        let mut file = std::io::BufWriter::new(std::fs::File::create(&huge).unwrap());
        writeln!(file, "{{\"id\": \"before\", \"text\": \"a\"}}").unwrap();
        write!(file, "{{\"id\": \"huge\", \"text\": \"").unwrap();
        let chunk = "x".repeat(1 << 20);
        for _ in 0..17 {
            file.write_all(chunk.as_bytes()).unwrap();
        }
        writeln!(file, "\"}}").unwrap();
        writeln!(file, "{{\"id\": \"after\", \"text\": \"b\"}}").unwrap();
    }
    let summary = build(&args(&huge, &out, true), false).unwrap();
    assert_eq!(ids(&out), ["before", "after"]);
    assert_eq!(summary.bad_rows_listed[0].line, 2);
    assert_eq!(summary.bad_rows_listed[0].why, "over 16 MiB");
}

/// Two rows with one id stop the build (`--skip-bad-rows` or not), naming the id and both files.
#[test]
fn a_repeated_id_across_tables_stops_the_build() {
    let tmp = tempfile::tempdir().unwrap();
    let src = tmp.path().join("src");
    std::fs::create_dir(&src).unwrap();
    std::fs::write(
        src.join("a.jsonl"),
        "{\"id\": \"p\", \"text\": \"x\"}\n{\"id\": \"q\", \"text\": \"y\"}\n",
    )
    .unwrap();
    std::fs::write(src.join("b.csv"), "id,text\nr,z\nq,again\np,again\n").unwrap();
    let out = tmp.path().join("out.jsonl");
    for skip in [false, true] {
        let error = build(&args(&src, &out, skip), false).unwrap_err();
        match &error {
            BuildError::DuplicateId { id, first, second } => {
                assert_eq!(id, "q");
                assert!(
                    first.ends_with("a.jsonl") && second.ends_with("b.csv"),
                    "{error}"
                );
            }
            other => panic!("{other}"),
        }
        assert!(!out.exists());
        assert_eq!(files_in(tmp.path()), 1, "a temporary left behind");
    }
}

/// Each format has its own bound, found by the file's size alone (sparse files here, never
/// read): a document over 16 MiB and a table over 4 GiB are skipped and listed.
#[test]
fn documents_and_tables_have_their_own_bounds() {
    let tmp = tempfile::tempdir().unwrap();
    let src = tmp.path().join("src");
    std::fs::create_dir(&src).unwrap();
    std::fs::write(src.join("a.jsonl"), "{\"text\": \"kept\"}\n").unwrap();
    let sparse = |name: &str, len: u64| {
        std::fs::File::create(src.join(name))
            .unwrap()
            .set_len(len)
            .unwrap();
    };
    sparse("big.md", crate::files::MAX_FILE_BYTES + 1);
    sparse("huge.jsonl", crate::files::MAX_TABLE_BYTES + 1);
    let out = tmp.path().join("out.jsonl");
    let summary = build(&args(&src, &out, false), false).unwrap();
    assert_eq!(summary.passages, 1);
    let skipped: Vec<(String, &str)> = summary
        .skipped
        .iter()
        .map(|s| {
            (
                s.path.file_name().unwrap().to_string_lossy().into_owned(),
                s.why.as_str(),
            )
        })
        .collect();
    assert_eq!(
        skipped,
        [
            ("big.md".to_owned(), "over 16 MiB"),
            ("huge.jsonl".to_owned(), "over 4 GiB")
        ]
    );
}
