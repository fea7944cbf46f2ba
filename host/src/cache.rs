//! Where turnstile keeps what it can rebuild: the corpus index and precompiled plugins.
//!
//! A precompiled plugin is native code that is loaded without being checked again, so the
//! directory must be this user's alone: it is created `0700`, and an existing one is used only
//! when the current user owns it and neither group nor others may write to it. Otherwise the
//! cache is off (with a warning): the index is built into a private temporary directory for the
//! life of the process, and plugins are compiled every time. There is no shared fallback (no
//! `/tmp/turnstile` another local user could plant files in).
//!
//! What a build cut short leaves is removed when the cache opens, and the cache can be bounded:
//! [`crate::cache_trim`].

use std::os::unix::fs::{DirBuilderExt, MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};

use crate::cache_trim::{Trimmed, remove_stale_temporaries, trim};

/// `$XDG_CACHE_HOME/turnstile`, else `~/.cache/turnstile`; `None` when neither variable is set.
pub fn default_cache_dir() -> Option<PathBuf> {
    std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")))
        .map(|base| base.join("turnstile"))
}

/// Why a cache directory is not used.
#[derive(Debug, thiserror::Error)]
pub enum CacheRefused {
    /// No directory was given and neither `XDG_CACHE_HOME` nor `HOME` is set.
    #[error("no cache directory: neither XDG_CACHE_HOME nor HOME is set")]
    NoDefault,
    /// It could not be created or inspected.
    #[error("{}: {source}", .path.display())]
    Io {
        /// The directory.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// It is not a directory.
    #[error("{}: not a directory", .0.display())]
    NotADirectory(PathBuf),
    /// Another user owns it.
    #[error("{}: owned by uid {owner}, not by this user (uid {me})", .path.display())]
    NotOwned {
        /// The directory.
        path: PathBuf,
        /// Its owner.
        owner: u32,
        /// The current user.
        me: u32,
    },
    /// Group or others may write to it.
    #[error("{}: mode {mode:o} lets group or others write to it", .path.display())]
    Writable {
        /// The directory.
        path: PathBuf,
        /// Its permission bits.
        mode: u32,
    },
}

/// The cache directory to use: `given`, else the default; created `0700` if missing, and
/// refused unless this user owns it and no one else may write to it.
pub fn private_cache_dir(given: Option<&Path>) -> Result<PathBuf, CacheRefused> {
    let path = match given {
        Some(p) => p.to_owned(),
        None => default_cache_dir().ok_or(CacheRefused::NoDefault)?,
    };
    let io = |source| CacheRefused::Io {
        path: path.clone(),
        source,
    };
    if !path.exists() {
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(&path)
            .map_err(io)?;
    }
    let metadata = std::fs::symlink_metadata(&path).map_err(io)?;
    if !metadata.is_dir() {
        return Err(CacheRefused::NotADirectory(path));
    }
    let me = rustix::process::geteuid().as_raw();
    if metadata.uid() != me {
        return Err(CacheRefused::NotOwned {
            path,
            owner: metadata.uid(),
            me,
        });
    }
    let mode = metadata.permissions().mode() & 0o777;
    if mode & 0o022 != 0 {
        return Err(CacheRefused::Writable { path, mode });
    }
    Ok(path)
}

/// The cache a process uses: a private directory, or — when none can be had — a temporary
/// directory for the corpus index only, removed when this value is dropped.
#[derive(Debug)]
pub struct Cache {
    dir: PathBuf,
    private: bool,
    /// Most bytes its entries may take ([`Cache::trim`]); `None`: no bound.
    max_bytes: Option<u64>,
    _temporary: Option<tempfile::TempDir>,
}

impl Cache {
    /// The private cache at `given` (or the default), with the temporaries left in it by a
    /// build cut short removed ([`remove_stale_temporaries`]); else, with a warning naming why,
    /// a temporary directory with no precompiled plugins. Unbounded until [`Cache::bounded`].
    pub fn open(given: Option<&Path>) -> std::io::Result<Self> {
        match private_cache_dir(given) {
            Ok(dir) => {
                let cache = Self {
                    dir,
                    private: true,
                    max_bytes: None,
                    _temporary: None,
                };
                let now = std::time::SystemTime::now();
                for dir in cache.dirs() {
                    for path in remove_stale_temporaries(&dir, now) {
                        tracing::info!(path = %path.display(), "removed a temporary left over from a build cut short");
                    }
                }
                Ok(cache)
            }
            Err(refused) => {
                tracing::warn!(%refused, "cache off: the corpus index is built in a temporary directory and plugins are compiled at every start");
                let temporary = tempfile::Builder::new().prefix("turnstile-").tempdir()?;
                Ok(Self {
                    dir: temporary.path().to_owned(),
                    private: false,
                    max_bytes: None,
                    _temporary: Some(temporary),
                })
            }
        }
    }

    /// This cache, whose entries [`Cache::trim`] keeps within `max_bytes` (`None`: no bound).
    pub fn bounded(mut self, max_bytes: Option<u64>) -> Self {
        self.max_bytes = max_bytes;
        self
    }

    /// Removes entries, least recently used first, until the cache is within its bound (see
    /// [`trim`]): never one of `keep` (the index about to be used or just built) nor one in
    /// use. Nothing without a bound. Logs what it removed, and a warning when what is kept or
    /// in use alone passes the bound.
    pub fn trim(&self, keep: &[&Path]) -> Trimmed {
        let Some(max_bytes) = self.max_bytes else {
            return Trimmed::default();
        };
        let trimmed = trim(&self.dirs(), max_bytes, keep);
        for path in &trimmed.removed {
            tracing::info!(path = %path.display(), "cache trimmed: removed its least recently used entry");
        }
        if trimmed.bytes_after > max_bytes {
            tracing::warn!(
                bytes = trimmed.bytes_after,
                max_bytes,
                "the cache is over its bound with what is in use or about to be used alone"
            );
        }
        trimmed
    }

    /// The folders whose entries the cache holds.
    fn dirs(&self) -> Vec<PathBuf> {
        std::iter::once(self.index_dir())
            .chain(self.plugins_dir())
            .collect()
    }

    /// Where the corpus index lives.
    pub fn index_dir(&self) -> PathBuf {
        self.dir.join("index")
    }

    /// Where precompiled plugins live, when the cache is private.
    pub fn plugins_dir(&self) -> Option<PathBuf> {
        self.private.then(|| self.dir.join("plugins"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_private_directory_of_this_user_is_used() {
        let tmp = tempfile::tempdir().unwrap();
        let fresh = tmp.path().join("a/b/cache");
        let used = private_cache_dir(Some(&fresh)).unwrap();
        assert_eq!(used, fresh);
        let mode = std::fs::metadata(&fresh).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o700);

        let shared = tmp.path().join("shared");
        std::fs::create_dir(&shared).unwrap();
        std::fs::set_permissions(&shared, std::fs::Permissions::from_mode(0o770)).unwrap();
        assert!(matches!(
            private_cache_dir(Some(&shared)),
            Err(CacheRefused::Writable { mode: 0o770, .. })
        ));

        let file = tmp.path().join("file");
        std::fs::write(&file, b"").unwrap();
        assert!(matches!(
            private_cache_dir(Some(&file)),
            Err(CacheRefused::NotADirectory(_))
        ));
    }

    /// Opening the cache removes what a build cut short left (an index temporary whose build
    /// lock is free), and nothing else.
    #[test]
    fn opening_the_cache_removes_what_a_build_cut_short_left() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("cache");
        let index = dir.join("index");
        std::fs::create_dir_all(&index).unwrap();
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700)).unwrap();
        for name in [
            "corpus-0123456789abcdef-v5.lock",
            "corpus-0123456789abcdef-v5.Xy12Zw.tmp",
            "corpus-fedcba9876543210-v5.sqlite",
        ] {
            std::fs::write(index.join(name), b"left").unwrap();
        }
        let cache = Cache::open(Some(&dir)).unwrap();
        assert!(cache.private);
        let mut left: Vec<String> = std::fs::read_dir(&index)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        left.sort();
        assert_eq!(
            left,
            [
                "corpus-0123456789abcdef-v5.lock",
                "corpus-fedcba9876543210-v5.sqlite"
            ]
        );
        // Unbounded: trimming removes nothing.
        assert_eq!(cache.trim(&[]), Trimmed::default());
        let bounded = cache.bounded(Some(0));
        assert_eq!(
            bounded.trim(&[]).removed,
            [index.join("corpus-fedcba9876543210-v5.sqlite")]
        );
    }
}
