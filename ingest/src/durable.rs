//! The output written durably: a uniquely named temporary file in the output's own directory
//! (so that builds running at once never share one, and the rename stays in one file system),
//! flushed to disk, renamed over the output, and the rename itself flushed with the directory.
//! A crash leaves either the old output or the new one, whole — never a renamed but empty file.

use std::fs::File;
use std::path::{Path, PathBuf};

use tempfile::NamedTempFile;

/// A new temporary file beside `out`, named `.NAME.XXXXXX.partial` (hidden: a later build of
/// that folder passes over it), with the permissions a newly created file gets (`0666` less the
/// umask), as the output had when it was written in place. It is removed when dropped, unless
/// [`persist`] renamed it; while it is open it holds an exclusive lock (`flock`), which tells a
/// later build that it is being written. Temporaries of `out` a killed build left behind are
/// removed first ([`remove_stale`]).
pub(crate) fn temporary_beside(out: &Path) -> std::io::Result<NamedTempFile> {
    use std::os::unix::fs::PermissionsExt;
    let name = out.file_name().unwrap_or_default().to_string_lossy();
    let prefix = format!(".{name}.");
    remove_stale(directory_of(out), &prefix);
    let tmp = tempfile::Builder::new()
        .prefix(&prefix)
        .rand_bytes(RANDOM_CHARS)
        .suffix(SUFFIX)
        .permissions(std::fs::Permissions::from_mode(0o666))
        .tempfile_in(directory_of(out))?;
    tmp.as_file().lock()?;
    Ok(tmp)
}

/// The temporaries' random part, in characters (alphanumeric).
const RANDOM_CHARS: usize = 6;

const SUFFIX: &str = ".partial";

/// How long a temporary must have gone unwritten before a build takes it for a killed build's:
/// a build writes its temporary continuously, and locks it the moment it is created, so the age
/// only guards the instant between the two.
const STALE_AFTER: std::time::Duration = std::time::Duration::from_secs(60);

/// Removes the temporaries named `PREFIX` + six alphanumerics + `.partial` in `dir` that no
/// build holds (their lock is free: the process that wrote them is gone) and that went unwritten
/// for [`STALE_AFTER`]. Best effort: what cannot be read or removed is left, and other files
/// (another output's temporaries, the old shared `FILE.partial` name) are never touched.
/// Returns how many were removed.
pub(crate) fn remove_stale(dir: &Path, prefix: &str) -> usize {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return 0;
    };
    let mut removed = 0;
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(name) = name.to_str() else { continue };
        let random = name
            .strip_prefix(prefix)
            .and_then(|rest| rest.strip_suffix(SUFFIX));
        let ours = random.is_some_and(|r| {
            r.len() == RANDOM_CHARS && r.bytes().all(|b| b.is_ascii_alphanumeric())
        });
        if ours && is_stale(&entry.path()) && std::fs::remove_file(entry.path()).is_ok() {
            removed += 1;
        }
    }
    removed
}

/// A regular file (not a link), unwritten for [`STALE_AFTER`], whose lock is free.
fn is_stale(path: &Path) -> bool {
    let Ok(metadata) = std::fs::symlink_metadata(path) else {
        return false;
    };
    let old = metadata
        .modified()
        .ok()
        .and_then(|m| m.elapsed().ok())
        .is_some_and(|age| age >= STALE_AFTER);
    if !metadata.is_file() || !old {
        return false;
    }
    // The lock is taken on this descriptor and dropped with it. (Should a link be swapped in
    // meanwhile, what is removed is the link, never what it names.)
    let Ok(file) = std::fs::File::open(path) else {
        return false;
    };
    file.try_lock().is_ok()
}

/// Flushes `tmp` to disk, renames it over `out`, then flushes `out`'s directory so that the
/// rename survives a crash too. On an error, `tmp` is removed (the output is as it was, unless
/// only the directory's flush failed: then it is the new one, maybe not yet durable).
pub(crate) fn persist(tmp: NamedTempFile, out: &Path) -> Result<(), (PathBuf, std::io::Error)> {
    tmp.as_file()
        .sync_all()
        .map_err(|e| (tmp.path().to_owned(), e))?;
    tmp.persist(out).map_err(|e| (out.to_owned(), e.error))?;
    let directory = directory_of(out);
    File::open(directory)
        .and_then(|d| d.sync_all())
        .map_err(|e| (directory.to_owned(), e))
}

/// The directory `path` is in (`.` for a bare name).
fn directory_of(path: &Path) -> &Path {
    match path.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => parent,
        _ => Path::new("."),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::build::{BuildArgs, build};

    fn args(source: &Path, out: &Path) -> BuildArgs {
        BuildArgs::one(source, out)
    }

    /// A folder of `sections` Markdown sections of `words` words each.
    fn source(dir: &Path, name: &str, sections: usize, words: usize) -> PathBuf {
        let folder = dir.join(name);
        std::fs::create_dir(&folder).unwrap();
        let mut text = format!("# {name}\n\n");
        for s in 0..sections {
            text.push_str(&format!("## Part {s}\n\n"));
            text.push_str(&format!("{name} word{s} ").repeat(words));
            text.push_str("\n\n");
        }
        std::fs::write(folder.join("doc.md"), text).unwrap();
        folder
    }

    fn names_in(dir: &Path) -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    }

    /// The build writes a temporary of its own: the file another build is writing (under the
    /// name every build used to share, `FILE.partial`) is neither truncated nor renamed away.
    #[test]
    fn a_build_never_touches_another_builds_temporary() {
        let tmp = tempfile::tempdir().unwrap();
        let src = source(tmp.path(), "alpha", 3, 20);
        let out_dir = tmp.path().join("out");
        std::fs::create_dir(&out_dir).unwrap();
        let out = out_dir.join("corpus.jsonl");
        let others = out_dir.join("corpus.jsonl.partial");
        std::fs::write(&others, "another build's half-written lines\n").unwrap();
        let summary = build(&args(&src, &out), false).unwrap();
        assert_eq!(summary.passages, 3);
        assert_eq!(
            std::fs::read_to_string(&others).unwrap(),
            "another build's half-written lines\n"
        );
        let written = std::fs::read(&out).unwrap();
        assert_eq!(written.len() as u64, summary.bytes);
        assert_eq!(turnstile_corpus::load_documents(&written).unwrap().len(), 3);
        // Only the output and its manifest were added: their temporaries are gone (renamed).
        assert_eq!(
            names_in(&out_dir),
            [
                "corpus.jsonl",
                "corpus.jsonl.manifest",
                "corpus.jsonl.partial"
            ]
        );
    }

    /// A killed build's temporary (unlocked, unwritten for a while) is removed by the next
    /// build to that output; one a running build holds (locked), one just written, another
    /// output's and a name of another shape are left alone.
    #[test]
    fn a_killed_builds_temporary_is_removed_by_the_next_build() {
        let tmp = tempfile::tempdir().unwrap();
        let src = source(tmp.path(), "alpha", 3, 20);
        let out_dir = tmp.path().join("out");
        std::fs::create_dir(&out_dir).unwrap();
        let out = out_dir.join("corpus.jsonl");
        let long_ago = std::time::SystemTime::now() - 2 * STALE_AFTER;
        let plant = |name: &str, old: bool| {
            let file = std::fs::File::create(out_dir.join(name)).unwrap();
            if old {
                file.set_modified(long_ago).unwrap();
            }
            file
        };
        drop(plant(".corpus.jsonl.k1ll3d.partial", true));
        drop(plant(".corpus.jsonl.manifest.Dead01.partial", true));
        let running = plant(".corpus.jsonl.Runnin.partial", true);
        running.lock().unwrap();
        drop(plant(".corpus.jsonl.JustNw.partial", false));
        drop(plant(".other.jsonl.Stale1.partial", true));
        drop(plant(".corpus.jsonl.toolong1.partial", true));
        drop(plant("corpus.jsonl.partial", true));

        build(&args(&src, &out), false).unwrap();
        assert_eq!(
            names_in(&out_dir),
            [
                ".corpus.jsonl.JustNw.partial",
                ".corpus.jsonl.Runnin.partial",
                ".corpus.jsonl.toolong1.partial",
                ".other.jsonl.Stale1.partial",
                "corpus.jsonl",
                "corpus.jsonl.manifest",
                "corpus.jsonl.partial",
            ]
        );
        drop(running);
        assert_eq!(remove_stale(&out_dir, ".corpus.jsonl."), 1);
    }

    /// Builds of two different sources to one output, at once, round after round: every build
    /// succeeds and the output is always one of the two corpora whole (the last rename wins),
    /// never a mix, a truncated file or a missing one; no temporary is left behind.
    #[test]
    fn builds_to_one_output_at_once_each_leave_it_whole() {
        let tmp = tempfile::tempdir().unwrap();
        let sources = [
            source(tmp.path(), "alpha", 40, 150),
            source(tmp.path(), "beta", 60, 100),
        ];
        let expected: Vec<Vec<u8>> = sources
            .iter()
            .map(|s| {
                let alone = tmp.path().join(format!(
                    "{}.jsonl",
                    s.file_name().unwrap().to_string_lossy()
                ));
                build(&args(s, &alone), false).unwrap();
                std::fs::read(&alone).unwrap()
            })
            .collect();
        assert_ne!(expected[0], expected[1]);
        let out_dir = tmp.path().join("out");
        std::fs::create_dir(&out_dir).unwrap();
        let out = out_dir.join("corpus.jsonl");
        for round in 0..10 {
            let start = std::sync::Barrier::new(2);
            std::thread::scope(|scope| {
                let builds: Vec<_> = sources
                    .iter()
                    .map(|s| {
                        let (start, out) = (&start, &out);
                        scope.spawn(move || {
                            start.wait();
                            build(&args(s, out), false)
                        })
                    })
                    .collect();
                for b in builds {
                    let result = b.join().unwrap();
                    assert!(result.is_ok(), "round {round}: {:?}", result.err());
                }
            });
            let written = std::fs::read(&out).unwrap();
            assert!(
                expected.contains(&written),
                "round {round}: the output is neither corpus whole ({} bytes)",
                written.len()
            );
            assert_eq!(
                names_in(&out_dir),
                ["corpus.jsonl", "corpus.jsonl.manifest"],
                "round {round}"
            );
        }
    }

    /// A build that fails keeps the old output and leaves no temporary; one that succeeds
    /// leaves its output alone, written with a new file's usual permissions.
    #[test]
    fn a_failed_build_removes_its_temporary_and_keeps_the_output() {
        use std::os::unix::fs::PermissionsExt;
        let tmp = tempfile::tempdir().unwrap();
        let out_dir = tmp.path().join("out");
        std::fs::create_dir(&out_dir).unwrap();
        let out = out_dir.join("corpus.jsonl");
        std::fs::write(&out, "kept").unwrap();
        let empty = tmp.path().join("empty");
        std::fs::create_dir(&empty).unwrap();
        std::fs::write(empty.join("notes.doc"), "not read").unwrap();
        let error = build(&args(&empty, &out), false).unwrap_err();
        assert!(matches!(error, crate::BuildError::Empty(_)), "{error}");
        assert_eq!(std::fs::read_to_string(&out).unwrap(), "kept");
        assert_eq!(names_in(&out_dir), ["corpus.jsonl"]);

        let rows = tmp.path().join("rows.csv");
        std::fs::write(&rows, "id,text\na,first\na,second\n").unwrap();
        let error = build(&args(&rows, &out), false).unwrap_err();
        assert!(
            matches!(error, crate::BuildError::DuplicateId { .. }),
            "{error}"
        );
        assert_eq!(names_in(&out_dir), ["corpus.jsonl"]);

        let src = source(tmp.path(), "alpha", 2, 10);
        build(&args(&src, &out), false).unwrap();
        assert_eq!(
            names_in(&out_dir),
            ["corpus.jsonl", "corpus.jsonl.manifest"]
        );
        let mode = std::fs::metadata(&out).unwrap().permissions().mode() & 0o777;
        // 0666 less the umask: at least the owner reads and writes, as with `File::create`.
        assert_eq!(mode & 0o600, 0o600, "{mode:o}");
    }

    #[test]
    fn a_bare_name_is_in_the_current_directory() {
        assert_eq!(directory_of(Path::new("corpus.jsonl")), Path::new("."));
        assert_eq!(directory_of(Path::new("a/corpus.jsonl")), Path::new("a"));
        assert_eq!(directory_of(Path::new("/corpus.jsonl")), Path::new("/"));
    }
}
