//! Files the tests share: the binary under test, the shared cache, the shipped components written
//! out, and their digests.
//!
//! Each test writes only into its own [`tempfile::TempDir`] (removed on drop), except the corpus
//! index and precompiled-plugin cache, which all tests share under cargo's scratch directory for
//! integration tests (`CARGO_TARGET_TMPDIR`): a cache, built once and reused.

use std::path::{Path, PathBuf};

/// The shared corpus-index and precompiled-plugin cache.
pub fn cache_dir() -> PathBuf {
    Path::new(env!("CARGO_TARGET_TMPDIR")).join("cache")
}

/// The `turnstile` binary under test.
pub fn binary() -> &'static Path {
    Path::new(env!("CARGO_BIN_EXE_turnstile"))
}

/// The embedded default (hybrid) plugin written to `dir/retrieval-hybrid.wasm`, for tests that
/// need its path.
pub fn hybrid_plugin(dir: &Path) -> PathBuf {
    let path = dir.join("retrieval-hybrid.wasm");
    std::fs::write(&path, turnstile_host::embedded_retrieval()).unwrap();
    path
}

/// The lexical (bm25-only, contract 0.1.1) plugin written to `dir/lexical.wasm`.
pub fn lexical_plugin(dir: &Path) -> PathBuf {
    let path = dir.join("lexical.wasm");
    std::fs::write(&path, turnstile_host::embedded_lexical()).unwrap();
    path
}

/// sha256 (hex) of a file.
pub fn sha256_of(path: impl AsRef<Path>) -> String {
    use sha2::Digest;
    hex::encode(sha2::Sha256::digest(std::fs::read(path).unwrap()))
}

/// `--swap-root` flags for every directory of the fixture components (the Rust guests, the
/// Python and JavaScript ones, the WAT ones): what a test that swaps to them by an admin request
/// adds to its `serve` flags.
fn fixture_roots() -> Vec<String> {
    let mut flags = Vec::new();
    for component in [
        turnstile_fixtures::DELAY,
        turnstile_fixtures::RETRIEVAL_PY,
        turnstile_fixtures::OUTSIDE,
    ] {
        let dir = Path::new(component).parent().unwrap().display().to_string();
        if !flags.contains(&dir) {
            flags.extend(["--swap-root".to_owned(), dir]);
        }
    }
    flags
}

/// `flags` and [`fixture_roots`].
pub fn with_fixture_roots(flags: &[&str]) -> Vec<String> {
    flags
        .iter()
        .map(|f| (*f).to_owned())
        .chain(fixture_roots())
        .collect()
}
