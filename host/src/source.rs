//! Reading a plugin's component: the two embedded in the binary, or a file the operator names
//! (a regular file of bounded size, [`turnstile_corpus::RegularFile`]: a FIFO or a device
//! cannot block or flood the read), and its sha256.

use std::borrow::Cow;
use std::path::PathBuf;

use crate::error::PluginError;

/// The default retrieval plugin, built from `plugins/retrieval-hybrid` by this crate's build
/// script and embedded in the binary.
static EMBEDDED_RETRIEVAL: &[u8] =
    include_bytes!(concat!(env!("OUT_DIR"), "/retrieval-hybrid.wasm"));
/// The lexical (bm25-only) plugin, built from `plugins/retrieval`: what the default was before
/// contract 0.1.2, kept in the binary so the eval and the tests can always compare the two
/// (operators get it as `target/plugins/retrieval.wasm` from `cargo xtask plugins`).
static EMBEDDED_LEXICAL: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/retrieval.wasm"));

/// The component bytes of the embedded default plugin (what `PluginSource::Embedded` serves).
pub fn embedded_retrieval() -> &'static [u8] {
    EMBEDDED_RETRIEVAL
}

/// The component bytes of the embedded lexical plugin.
pub fn embedded_lexical() -> &'static [u8] {
    EMBEDDED_LEXICAL
}

/// Largest plugin file read, in bytes (a component is a few hundred KiB to a few MiB): bounds
/// what a swap reads and compiles.
pub const MAX_PLUGIN_BYTES: u64 = 64 << 20;

/// Where a plugin's component comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PluginSource {
    /// The retrieval plugin embedded in the binary.
    Embedded,
    /// A `.wasm` component file chosen by the operator.
    File(PathBuf),
}

impl PluginSource {
    /// The plugin's name: its file stem, or `retrieval-hybrid` for the embedded one.
    pub fn name(&self) -> String {
        match self {
            Self::Embedded => "retrieval-hybrid".to_owned(),
            Self::File(path) => path
                .file_stem()
                .map(|s| s.to_string_lossy().into_owned())
                .unwrap_or_else(|| "plugin".to_owned()),
        }
    }

    /// The component's bytes. A file must be a regular file of at most [`MAX_PLUGIN_BYTES`]:
    /// a device (`/dev/zero`), a FIFO or a directory is refused before anything is read.
    pub fn read(&self) -> Result<Cow<'static, [u8]>, PluginError> {
        let path = match self {
            Self::Embedded => return Ok(Cow::Borrowed(EMBEDDED_RETRIEVAL)),
            Self::File(path) => path,
        };
        let refuse = |error: std::io::Error| PluginError::Read {
            path: path.clone(),
            error,
        };
        let bytes = turnstile_corpus::RegularFile::open(path, MAX_PLUGIN_BYTES)
            .and_then(turnstile_corpus::RegularFile::read_all)
            .map_err(refuse)?;
        Ok(Cow::Owned(bytes))
    }
}

/// The component in `file`, opened already for `path` (an admin swap opens under its root and
/// reads only through what it opened): a regular file of at most [`MAX_PLUGIN_BYTES`].
pub(crate) fn read_opened(
    path: &std::path::Path,
    file: std::io::Result<std::fs::File>,
) -> Result<Vec<u8>, PluginError> {
    file.and_then(|file| turnstile_corpus::RegularFile::of(file, MAX_PLUGIN_BYTES))
        .and_then(turnstile_corpus::RegularFile::read_all)
        .map_err(|error| PluginError::Read {
            path: path.to_owned(),
            error,
        })
}
