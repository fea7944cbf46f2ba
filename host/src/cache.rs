//! Where turnstile keeps what it can rebuild: the corpus index and precompiled plugins.

use std::path::PathBuf;

/// `$XDG_CACHE_HOME/turnstile`, else `~/.cache/turnstile`, else a temporary directory.
pub fn default_cache_dir() -> PathBuf {
    let base = std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")))
        .unwrap_or_else(std::env::temp_dir);
    base.join("turnstile")
}
