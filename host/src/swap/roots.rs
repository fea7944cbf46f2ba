//! Where an admin swap may read its file from: the directories the operator declared
//! (`--swap-root`, and by default those of the configured `--plugin` and `--corpus`). A path
//! outside them is refused before anything touches it — its existence, its type, its hash and
//! the OS's error are never looked at, so none can be told.
//!
//! A path under a root is **opened first, then checked**: each root is opened as a directory
//! when it is set, and a swap's file is opened relative to that handle with `openat2`'s
//! `RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS` — links are followed only while they stay beneath
//! the root, and one that leads out (or a symlinked directory that does, whatever is behind it)
//! is refused like a path outside it. What was opened is what is read and hashed, through that
//! descriptor: a name flipped between a file and a link after the check opens nothing new.
//! (Where the kernel has no `openat2`, before Linux 5.6, the path is resolved and checked, then
//! opened: the older, racy way, logged once.)

use std::fs::File;
use std::os::fd::OwnedFd;
use std::path::{Component, Path, PathBuf};
use std::sync::Arc;

use rustix::fs::{Mode, OFlags, ResolveFlags};

/// One root: the directory as given (made absolute), where it resolves, and a handle on it.
#[derive(Debug, Clone)]
struct Root {
    given: PathBuf,
    resolved: PathBuf,
    dir: Arc<OwnedFd>,
}

/// The directories admin swaps may read files from, opened when they are set.
#[derive(Debug, Clone, Default)]
pub struct SwapRoots {
    roots: Vec<Root>,
}

/// Two sets of roots are equal when they name the same directories.
impl PartialEq for SwapRoots {
    fn eq(&self, other: &Self) -> bool {
        self.iter().eq(other.iter())
    }
}

impl Eq for SwapRoots {}

/// Why `dir` is no safe place to take swaps from — `/`, or a directory someone other than this
/// process's user (and root) can change: any user (world-writable, as `/tmp`), another group,
/// another owner — or `None`. There a local user could plant a link, or a file whose read never
/// returns, for an admin swap to read.
pub fn unsafe_root(dir: &Path) -> Option<&'static str> {
    use std::os::unix::fs::MetadataExt;
    let resolved = dir.canonicalize().ok()?;
    if resolved == Path::new("/") {
        return Some("it is the root directory");
    }
    let meta = std::fs::metadata(&resolved).ok()?;
    let me = rustix::process::geteuid().as_raw();
    if meta.mode() & 0o002 != 0 {
        return Some("every user can write to it");
    }
    if meta.mode() & 0o020 != 0 && meta.gid() != rustix::process::getegid().as_raw() {
        return Some("another group can write to it");
    }
    if meta.uid() != me && meta.uid() != 0 {
        return Some("another user owns it");
    }
    None
}

/// A file opened for a swap: the path that names it (for its name and messages) and the
/// outcome of the open — an error there (nothing at the path, not readable) is the reader's to
/// report, as for any file it cannot read.
#[derive(Debug)]
pub struct Opened {
    /// The path, as written, made absolute and normalised.
    pub path: PathBuf,
    /// What was opened.
    pub file: std::io::Result<File>,
}

/// A root that cannot be one.
#[derive(Debug, thiserror::Error)]
#[error("swap root {path}: {reason}")]
pub struct RootError {
    /// The directory as given.
    pub path: PathBuf,
    /// Why not.
    pub reason: String,
}

/// Why a path may not be swapped from; says nothing of what is at it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum Confinement {
    /// Outside every root (or resolved, through a link, outside them), or no root is set.
    #[error(
        "not a path under the swap roots (--swap-root; by default the directories of --plugin and --corpus): nothing was read"
    )]
    Outside,
}

impl SwapRoots {
    /// The directories `dirs`, each resolved; each must exist and be a directory. None: admin
    /// swaps by path are all refused.
    pub fn new(dirs: impl IntoIterator<Item = PathBuf>) -> Result<Self, RootError> {
        let mut roots: Vec<Root> = Vec::new();
        for dir in dirs {
            let refuse = |reason: String| RootError {
                path: dir.clone(),
                reason,
            };
            let resolved = dir.canonicalize().map_err(|e| refuse(e.to_string()))?;
            if !resolved.is_dir() {
                return Err(refuse("not a directory".to_owned()));
            }
            if roots.iter().any(|r| r.resolved == resolved) {
                continue;
            }
            let handle = rustix::fs::open(
                &resolved,
                OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC,
                Mode::empty(),
            )
            .map_err(|e| refuse(std::io::Error::from(e).to_string()))?;
            roots.push(Root {
                given: lexical(&dir).unwrap_or_else(|| resolved.clone()),
                resolved,
                dir: Arc::new(handle),
            });
        }
        Ok(Self { roots })
    }

    /// The resolved roots.
    pub fn iter(&self) -> impl Iterator<Item = &Path> {
        self.roots.iter().map(|r| r.resolved.as_path())
    }

    /// Whether no root is set.
    pub fn is_empty(&self) -> bool {
        self.roots.is_empty()
    }

    /// Opens `path` if it lies under a root: as written (made absolute against the working
    /// directory, `..` taken lexically) it must be strictly below a root — as the operator gave
    /// it or as it resolves (`/data` → `/mnt/data`: both name its files) — and outside, nothing
    /// is touched; then it is opened relative to the root's handle, links followed only while
    /// they stay beneath it. A link out is outside; anything else that fails the open is the
    /// reader's to report.
    pub fn open(&self, path: &Path) -> Result<Opened, Confinement> {
        let written = lexical(path).ok_or(Confinement::Outside)?;
        let (root, below) = self
            .roots
            .iter()
            .find_map(|root| {
                [&root.given, &root.resolved]
                    .into_iter()
                    .find_map(|prefix| {
                        written
                            .strip_prefix(prefix)
                            .ok()
                            .filter(|rest| !rest.as_os_str().is_empty())
                            .map(|rest| (root, rest.to_owned()))
                    })
            })
            .ok_or(Confinement::Outside)?;
        let opened = rustix::fs::openat2(
            &*root.dir,
            &below,
            OFlags::RDONLY | OFlags::CLOEXEC | OFlags::NONBLOCK | OFlags::NOCTTY,
            Mode::empty(),
            ResolveFlags::BENEATH | ResolveFlags::NO_MAGICLINKS,
        );
        match opened {
            Ok(fd) => Ok(Opened {
                path: written,
                file: Ok(File::from(fd)),
            }),
            // A link (or `..` through one) leading out of the root.
            Err(rustix::io::Errno::XDEV | rustix::io::Errno::LOOP) => Err(Confinement::Outside),
            Err(rustix::io::Errno::NOSYS) => {
                static OLD_KERNEL: std::sync::Once = std::sync::Once::new();
                OLD_KERNEL.call_once(|| {
                    tracing::warn!(
                        "no openat2 (Linux < 5.6): swap paths are resolved, checked, then opened"
                    );
                });
                let resolved = self.confine(&written)?;
                Ok(Opened {
                    file: File::open(&resolved),
                    path: written,
                })
            }
            Err(e) => Ok(Opened {
                path: written,
                file: Err(e.into()),
            }),
        }
    }

    /// `path` resolved, if it lies under a root: first as written (made absolute against the
    /// working directory, `..` taken lexically) — outside, nothing is touched — then with its
    /// links followed, which must land under a root too. Nothing at all at a path under a root
    /// is the reader's to report (as any file it cannot read there); a dangling link is outside.
    pub fn confine(&self, path: &Path) -> Result<PathBuf, Confinement> {
        let written = lexical(path).ok_or(Confinement::Outside)?;
        if !self.holds(&written) {
            return Err(Confinement::Outside);
        }
        match written.canonicalize() {
            Ok(resolved) if self.holds(&resolved) => Ok(resolved),
            Ok(_) => Err(Confinement::Outside),
            Err(e)
                if e.kind() == std::io::ErrorKind::NotFound
                    && std::fs::symlink_metadata(&written).is_err() =>
            {
                Ok(written)
            }
            Err(_) => Err(Confinement::Outside),
        }
    }

    /// Whether `path` (absolute, normalised) is strictly below a root.
    fn holds(&self, path: &Path) -> bool {
        self.roots.iter().any(|root| {
            [&root.given, &root.resolved]
                .iter()
                .any(|prefix| path.starts_with(prefix) && path != *prefix)
        })
    }
}

/// `path` made absolute and normalised without touching the filesystem: `.` dropped, `..` takes
/// off the last component (never above `/`). `None` when there is no working directory.
fn lexical(path: &Path) -> Option<PathBuf> {
    let absolute = std::path::absolute(path).ok()?;
    let mut normal = PathBuf::new();
    for component in absolute.components() {
        match component {
            Component::ParentDir => {
                normal.pop();
            }
            Component::CurDir => {}
            other => normal.push(other),
        }
    }
    Some(normal)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_are_confined_to_the_roots_links_included() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("root");
        let outside = dir.path().join("outside");
        std::fs::create_dir_all(root.join("sub")).unwrap();
        std::fs::create_dir_all(&outside).unwrap();
        std::fs::write(root.join("sub/a.jsonl"), "").unwrap();
        std::fs::write(outside.join("secret"), "").unwrap();
        std::os::unix::fs::symlink(outside.join("secret"), root.join("link-out")).unwrap();
        std::os::unix::fs::symlink(root.join("sub/a.jsonl"), root.join("link-in")).unwrap();
        let roots = SwapRoots::new([root.clone()]).unwrap();
        let root = root.canonicalize().unwrap();
        assert_eq!(
            roots.confine(&root.join("sub/a.jsonl")),
            Ok(root.join("sub/a.jsonl"))
        );
        assert_eq!(
            roots.confine(&root.join("link-in")),
            Ok(root.join("sub/a.jsonl"))
        );
        for path in [
            outside.join("secret"),
            root.join("link-out"),
            root.join("sub/../../outside/secret"),
            root.clone(),
            PathBuf::from("/etc/shadow"),
            PathBuf::from("/proc/self/environ"),
            PathBuf::from("relative/file"),
        ] {
            assert_eq!(
                roots.confine(&path),
                Err(Confinement::Outside),
                "{}",
                path.display()
            );
        }
        assert_eq!(
            roots.confine(&root.join("missing")),
            Ok(root.join("missing"))
        );
        std::os::unix::fs::symlink(outside.join("gone"), root.join("dangling")).unwrap();
        assert_eq!(
            roots.confine(&root.join("dangling")),
            Err(Confinement::Outside)
        );
        assert_eq!(
            SwapRoots::default().confine(&root.join("sub/a.jsonl")),
            Err(Confinement::Outside)
        );
        assert!(SwapRoots::new([root.join("sub/a.jsonl")]).is_err());
        assert!(SwapRoots::new([root.join("nowhere")]).is_err());
    }

    fn read(opened: Result<Opened, Confinement>) -> Result<String, Confinement> {
        opened.map(|o| match o.file {
            Ok(mut file) => {
                let mut text = String::new();
                std::io::Read::read_to_string(&mut file, &mut text).unwrap();
                text
            }
            Err(e) => format!("error: {:?}", e.kind()),
        })
    }

    /// Opened through the root: a link out — to a file, or through a symlinked directory, the
    /// file behind it there or not — is outside alike; a root reached through a link accepts
    /// its files by either name.
    #[test]
    fn a_file_is_opened_beneath_its_root_and_nothing_tells_what_is_outside() {
        let dir = tempfile::tempdir().unwrap();
        let real = dir.path().join("mnt-data");
        let outside = dir.path().join("outside");
        std::fs::create_dir_all(real.join("sub")).unwrap();
        std::fs::create_dir_all(&outside).unwrap();
        std::fs::write(real.join("sub/a.jsonl"), "inside").unwrap();
        std::fs::write(outside.join("secret"), "SECRET").unwrap();
        std::os::unix::fs::symlink(&real, dir.path().join("data")).unwrap();
        std::os::unix::fs::symlink(&outside, real.join("dir-out")).unwrap();
        std::os::unix::fs::symlink(outside.join("secret"), real.join("link-out")).unwrap();
        std::os::unix::fs::symlink("sub/a.jsonl", real.join("link-in")).unwrap();
        // The root as the operator gave it: through the link `data`.
        let roots = SwapRoots::new([dir.path().join("data")]).unwrap();
        for name in ["data/sub/a.jsonl", "data/link-in", "mnt-data/sub/a.jsonl"] {
            assert_eq!(
                read(roots.open(&dir.path().join(name))),
                Ok("inside".into()),
                "{name}"
            );
        }
        for name in [
            "data/link-out",
            "data/dir-out/secret",
            "data/dir-out/missing",
            "data/sub/../../outside/secret",
            "outside/secret",
            "data",
        ] {
            assert_eq!(
                read(roots.open(&dir.path().join(name))),
                Err(Confinement::Outside),
                "{name}"
            );
        }
        assert_eq!(
            read(roots.open(&dir.path().join("data/missing"))),
            Ok("error: NotFound".into())
        );
    }

    /// A name flipped between a file under the root and a link to one outside, as fast as a
    /// thread can, while it is opened at least 2,000 times (and until it has flipped 200 times
    /// and both sides were met): what is opened is never the outside file.
    #[test]
    fn a_link_flipped_under_a_swap_never_opens_what_is_outside() {
        use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("root");
        std::fs::create_dir_all(&root).unwrap();
        std::fs::write(dir.path().join("secret"), "SECRET").unwrap();
        let roots = SwapRoots::new([root.clone()]).unwrap();
        let flip = root.join("flip");
        let (stop, flips) = (
            Arc::new(AtomicBool::new(false)),
            Arc::new(AtomicU64::new(0)),
        );
        let flipper = {
            let (stop, flips) = (Arc::clone(&stop), Arc::clone(&flips));
            let (root, secret) = (root.clone(), dir.path().join("secret"));
            std::thread::spawn(move || {
                let (file, link) = (root.join("as-file"), root.join("as-link"));
                while !stop.load(Ordering::Relaxed) {
                    std::fs::write(&file, "inside").unwrap();
                    std::fs::rename(&file, root.join("flip")).unwrap();
                    let _ = std::fs::remove_file(&link);
                    std::os::unix::fs::symlink(&secret, &link).unwrap();
                    std::fs::rename(&link, root.join("flip")).unwrap();
                    flips.fetch_add(1, Ordering::Relaxed);
                }
            })
        };
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
        let (mut attempts, mut inside, mut outside_refused) = (0u64, 0u64, 0u64);
        while attempts < 2_000
            || flips.load(Ordering::Relaxed) < 200
            || inside == 0
            || outside_refused == 0
        {
            assert!(
                std::time::Instant::now() < deadline,
                "{attempts} opens, {} flips, {inside} inside, {outside_refused} refused",
                flips.load(Ordering::Relaxed)
            );
            attempts += 1;
            match read(roots.open(&flip)) {
                Ok(text) => {
                    assert_ne!(text, "SECRET", "the outside file was opened");
                    inside += 1;
                }
                Err(Confinement::Outside) => outside_refused += 1,
            }
        }
        stop.store(true, Ordering::Relaxed);
        flipper.join().unwrap();
    }

    #[test]
    fn a_root_others_can_change_is_unsafe() {
        use std::os::unix::fs::PermissionsExt;
        assert_eq!(
            unsafe_root(Path::new("/")),
            Some("it is the root directory")
        );
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(unsafe_root(dir.path()), None);
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o1777)).unwrap();
        assert_eq!(unsafe_root(dir.path()), Some("every user can write to it"));
    }
}
