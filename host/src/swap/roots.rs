//! Where an admin swap may read its file from: the directories the operator declared
//! (`--swap-root`, and by default those of the configured `--plugin` and `--corpus`). A path
//! outside them is refused before anything touches it — its existence, its type, its hash and
//! the OS's error are never looked at, so none can be told — and a path inside them is
//! resolved (symbolic links followed) and must still be inside: a link out of a root is
//! refused like a path outside it.

use std::path::{Component, Path, PathBuf};

/// The directories admin swaps may read files from, resolved when they are set.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SwapRoots {
    roots: Vec<PathBuf>,
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
        let mut roots = Vec::new();
        for dir in dirs {
            let refuse = |reason: String| RootError {
                path: dir.clone(),
                reason,
            };
            let resolved = dir.canonicalize().map_err(|e| refuse(e.to_string()))?;
            if !resolved.is_dir() {
                return Err(refuse("not a directory".to_owned()));
            }
            if !roots.contains(&resolved) {
                roots.push(resolved);
            }
        }
        Ok(Self { roots })
    }

    /// The resolved roots.
    pub fn iter(&self) -> impl Iterator<Item = &Path> {
        self.roots.iter().map(PathBuf::as_path)
    }

    /// Whether no root is set.
    pub fn is_empty(&self) -> bool {
        self.roots.is_empty()
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
        self.roots
            .iter()
            .any(|root| path.starts_with(root) && path != root)
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
}
