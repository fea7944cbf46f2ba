//! Reading a file someone names (the operator's `--corpus` or `--plugin`, an admin swap's path):
//! a regular file only, looked at before it is opened (opening a FIFO blocks until a writer
//! comes; a device may stream for ever), opened without blocking, looked at again (the path may
//! have changed meanwhile), and read to exactly the size it reported, which must be within a
//! bound: a file that grows, shrinks or reports a size it does not have (as `/proc` files report
//! 0) is refused, so the bound is the size check's, not a guess.

use std::fs::File;
use std::io::{self, Read};
use std::path::Path;

/// An open regular file of a known size, read to exactly that size.
#[derive(Debug)]
pub struct RegularFile {
    file: File,
    remaining: u64,
    probed: bool,
}

impl RegularFile {
    /// Opens `path` if it is a regular file of at most `max` bytes; errors are of kind
    /// `InvalidInput` ("not a regular file"), `FileTooLarge` ("N bytes; at most M are read") or
    /// the OS's.
    pub fn open(path: &Path, max: u64) -> io::Result<Self> {
        let not_regular = || io::Error::new(io::ErrorKind::InvalidInput, "not a regular file");
        if !std::fs::metadata(path)?.is_file() {
            return Err(not_regular());
        }
        let file = {
            use std::os::unix::fs::OpenOptionsExt;
            std::fs::OpenOptions::new()
                .read(true)
                .custom_flags(rustix::fs::OFlags::NONBLOCK.bits() as i32)
                .open(path)?
        };
        Self::of(file, max)
    }

    /// A file opened already (by a caller that checked where it opened it: an admin swap opens
    /// under its root, then reads only through that descriptor), if it is a regular file of at
    /// most `max` bytes.
    pub fn of(file: File, max: u64) -> io::Result<Self> {
        let not_regular = || io::Error::new(io::ErrorKind::InvalidInput, "not a regular file");
        let metadata = file.metadata()?;
        if !metadata.is_file() {
            return Err(not_regular());
        }
        if metadata.len() > max {
            return Err(io::Error::new(
                io::ErrorKind::FileTooLarge,
                format!("{} bytes; at most {max} are read", metadata.len()),
            ));
        }
        Ok(Self {
            file,
            remaining: metadata.len(),
            probed: false,
        })
    }

    /// The size the file reported when it was opened: what [`Read`] yields, exactly.
    pub fn len(&self) -> u64 {
        self.remaining
    }

    /// Whether the file reported no bytes.
    pub fn is_empty(&self) -> bool {
        self.remaining == 0
    }

    /// The whole file.
    pub fn read_all(mut self) -> io::Result<Vec<u8>> {
        let mut bytes = Vec::with_capacity(self.remaining as usize);
        self.read_to_end(&mut bytes)?;
        Ok(bytes)
    }
}

impl Read for RegularFile {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if buf.is_empty() {
            return Ok(0);
        }
        if self.remaining == 0 {
            // Past the reported size there must be nothing (a `/proc` file reports 0 and has
            // content; a file may grow while it is read).
            if !self.probed {
                self.probed = true;
                let mut probe = [0u8; 1];
                if self.file.read(&mut probe)? > 0 {
                    return Err(changed());
                }
            }
            return Ok(0);
        }
        let want = buf
            .len()
            .min(usize::try_from(self.remaining).unwrap_or(usize::MAX));
        let n = self.file.read(&mut buf[..want])?;
        if n == 0 {
            return Err(changed());
        }
        self.remaining -= n as u64;
        Ok(n)
    }
}

fn changed() -> io::Error {
    io::Error::new(
        io::ErrorKind::InvalidData,
        "its size changed while it was read, or is not what it reports (not a plain file)",
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_regular_file_is_read_whole() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a");
        std::fs::write(&path, b"hello").unwrap();
        assert_eq!(
            RegularFile::open(&path, 5).unwrap().read_all().unwrap(),
            b"hello"
        );
        let err = RegularFile::open(&path, 4).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::FileTooLarge, "{err}");
    }

    #[test]
    fn fifos_directories_and_devices_are_refused_before_they_are_opened() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("fifo");
        let made = std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap();
        assert!(made.success());
        // Opening a FIFO for reading would block here until a writer came.
        for path in [fifo.as_path(), dir.path(), Path::new("/dev/zero")] {
            let err = RegularFile::open(path, 1 << 20).unwrap_err();
            assert_eq!(err.to_string(), "not a regular file", "{}", path.display());
        }
    }

    #[test]
    fn a_proc_file_that_reports_no_size_is_refused() {
        let file = RegularFile::open(Path::new("/proc/self/status"), 1 << 20).unwrap();
        assert_eq!(file.len(), 0, "procfs reports 0 bytes");
        let err = file.read_all().unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::InvalidData, "{err}");
    }
}
