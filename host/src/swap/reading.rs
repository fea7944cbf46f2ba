//! Reading a swap's candidate file: opened as its trigger allows (an admin swap's under the
//! roots, through the root's handle: `super::roots`), then read — and hashed — only through what
//! was opened, on a thread of its own under [`SWAP_READ_DEADLINE`]: a file whose read never
//! returns (a FUSE file, a stalled network mount) fails the swap in bounded time instead of
//! holding the swap's slot for every later swap and reload. The abandoned read ends when the
//! file system answers.

use std::fs::File;
use std::path::{Path, PathBuf};
use std::time::Duration;

use super::hot_swap::Trigger;
use super::roots::{Confinement, Opened, SwapRoots};

/// The longest a swap waits to open and read its candidate file.
pub const SWAP_READ_DEADLINE: Duration = Duration::from_secs(30);

impl Trigger {
    /// Opens the file a swap under this trigger reads for `path`: an admin swap's only under
    /// `roots` (opened through the root), a reload's — the operator's own configuration — as
    /// it is.
    pub(super) fn open(&self, roots: &SwapRoots, path: &Path) -> Result<Opened, Confinement> {
        match self {
            Self::Reload => Ok(Opened {
                path: path.to_owned(),
                file: open_plain(path),
            }),
            Self::Admin { .. } => roots.open(path),
        }
    }
}

/// Opens `path` for reading without blocking on it (a FIFO opens at once, then is refused as
/// not a regular file).
fn open_plain(path: &Path) -> std::io::Result<File> {
    use std::os::unix::fs::OpenOptionsExt;
    std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(rustix::fs::OFlags::NONBLOCK.bits() as i32)
        .open(path)
}

/// Opens `path` as `trigger` allows and runs `read` on what was opened, under
/// [`SWAP_READ_DEADLINE`]: `Err(path)` past it.
pub(super) fn open_and_read<T: Send + 'static>(
    trigger: &Trigger,
    roots: &SwapRoots,
    path: &Path,
    read: impl FnOnce(Opened) -> T + Send + 'static,
) -> Result<Result<T, PathBuf>, Confinement> {
    let (trigger, roots, path) = (trigger.clone(), roots.clone(), path.to_owned());
    let (done, outcome) = std::sync::mpsc::sync_channel(1);
    let shown = path.clone();
    let spawned = std::thread::Builder::new()
        .name("turnstile-swap-read".into())
        .spawn(move || {
            let _ = done.send(trigger.open(&roots, &path).map(read));
        });
    if spawned.is_err() {
        return Ok(Err(shown));
    }
    match outcome.recv_timeout(SWAP_READ_DEADLINE) {
        Ok(opened) => opened.map(Ok),
        Err(_) => Ok(Err(shown)),
    }
}

/// The error of a read that did not end within [`SWAP_READ_DEADLINE`].
pub(super) fn too_slow() -> std::io::Error {
    std::io::Error::new(
        std::io::ErrorKind::TimedOut,
        format!(
            "the file was not read within {} s",
            SWAP_READ_DEADLINE.as_secs()
        ),
    )
}
