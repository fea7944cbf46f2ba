//! The checksum of a built index file, written beside it when it is built and checked every
//! time it is reused: xxh3-128 over every byte of the file. Not a defence against someone who
//! can write the cache (they could rewrite the checksum too), but against a torn, truncated or
//! damaged file: any change to any page — any table — changes it.
//!
//! The file is hashed in 64 MiB chunks, on as many threads as there are cores (at most 4), each
//! chunk's xxh3-128 then hashed in order with the file's length: about the time of reading the
//! file once from the page cache, split across cores. Measured (`benches/open_cost.rs`, release,
//! 2 shared cores, warm page cache): 0.03–0.12 s at 100,000 passages (306 MB), 0.3–0.55 s at a
//! million (3.0 GB), where the file's sha256 with FTS5's integrity check and the content checksum
//! took about 1 CPU-second per 100,000 passages (FTS5's check alone 6.2 s at a million). The
//! reads that load the index next would bring every page into the page cache anyway.

use std::path::Path;

use xxhash_rust::xxh3::Xxh3;

/// What the checksum file says before the digest: a file written another way (an older build's
/// bare sha256) never matches, and its index is rebuilt.
const ALGORITHM: &str = "xxh3-128/64MiB";

/// The chunks hashed on their own, in parallel.
const CHUNK: u64 = 64 << 20;

/// The most threads one check uses.
pub(crate) const MAX_THREADS: usize = 4;

/// The blocks a thread reads a chunk in: its memory (a thread's buffer, reused).
const BLOCK: u64 = 1 << 20;

/// The checksum of the whole file at `path`, as the checksum file records it:
/// `xxh3-128/64MiB:<32 lowercase hex digits>`.
#[cfg(test)]
pub(crate) fn of_file(path: &Path) -> std::io::Result<String> {
    of_file_on(path, MAX_THREADS)
}

/// [`of_file`] on at most `threads` threads (the same checksum whatever their number).
pub(crate) fn of_file_on(path: &Path, threads: usize) -> std::io::Result<String> {
    in_chunks(path, CHUNK, BLOCK, threads)
}

/// [`of_file`] with chunks of `chunk` bytes, read in blocks of `block` bytes, on at most
/// `threads` threads.
fn in_chunks(path: &Path, chunk: u64, block: u64, threads: usize) -> std::io::Result<String> {
    let file = std::fs::File::open(path)?;
    let length = file.metadata()?.len();
    let chunks = usize::try_from(length.div_ceil(chunk)).unwrap_or(usize::MAX);
    let threads = std::thread::available_parallelism()
        .map_or(1, usize::from)
        .clamp(1, threads.clamp(1, MAX_THREADS))
        .min(chunks.max(1));
    // Thread `t` hashes chunks t, t + threads, t + 2 × threads, …
    let per_thread: Vec<std::io::Result<Vec<(usize, u128)>>> = std::thread::scope(|scope| {
        let file = &file;
        let workers: Vec<_> = (0..threads)
            .map(|t| {
                scope.spawn(move || {
                    let mut buffer = Vec::new();
                    (t..chunks)
                        .step_by(threads)
                        .map(|c| {
                            let start = c as u64 * chunk;
                            let digest =
                                chunk_digest(file, start, (chunk, block), length, &mut buffer)?;
                            Ok((c, digest))
                        })
                        .collect()
                })
            })
            .collect();
        workers
            .into_iter()
            .map(|w| {
                w.join()
                    .unwrap_or_else(|_| Err(std::io::Error::other("a checksum thread panicked")))
            })
            .collect()
    });
    let mut digests = vec![0u128; chunks];
    for part in per_thread {
        for (c, digest) in part? {
            if let Some(slot) = digests.get_mut(c) {
                *slot = digest;
            }
        }
    }
    Ok(format!("{ALGORITHM}:{:032x}", combine(length, &digests)))
}

/// The xxh3-128 of the chunk of `file` at `start` (`chunk` bytes, fewer at the end of a file
/// `length` long), read in blocks of `block` bytes into `buffer`. A file that is shorter than
/// `length` now (cut while it was being read) is an error.
fn chunk_digest(
    file: &std::fs::File,
    start: u64,
    (chunk, block): (u64, u64),
    length: u64,
    buffer: &mut Vec<u8>,
) -> std::io::Result<u128> {
    use std::os::unix::fs::FileExt;
    let end = length.min(start.saturating_add(chunk));
    let mut hasher = Xxh3::new();
    let mut at = start;
    while at < end {
        let size = usize::try_from(block.min(end - at)).unwrap_or(usize::MAX);
        buffer.resize(size, 0);
        file.read_exact_at(buffer, at)?;
        hasher.update(buffer);
        at += size as u64;
    }
    Ok(hasher.digest128())
}

/// The file's digest from its length and its chunks' digests, in order.
fn combine(length: u64, digests: &[u128]) -> u128 {
    let mut hasher = Xxh3::new();
    hasher.update(&length.to_le_bytes());
    for digest in digests {
        hasher.update(&digest.to_le_bytes());
    }
    hasher.digest128()
}

/// Whether the recorded checksum `recorded` (the checksum file's text) is the one `actual`
/// computed now: surrounding white space aside (a checksum file edited by hand), the same.
pub(crate) fn matches(recorded: &str, actual: &str) -> bool {
    recorded.trim() == actual
}

/// [`of_file`] of `bytes`, computed in memory on one thread: what the tests compare with.
#[cfg(test)]
pub(crate) fn of_bytes(bytes: &[u8]) -> String {
    of_bytes_in(bytes, CHUNK)
}

/// [`of_bytes`] with chunks of `chunk` bytes.
#[cfg(test)]
fn of_bytes_in(bytes: &[u8], chunk: u64) -> String {
    let digests: Vec<u128> = bytes
        .chunks(usize::try_from(chunk).unwrap_or(usize::MAX))
        .map(xxhash_rust::xxh3::xxh3_128)
        .collect();
    format!("{ALGORITHM}:{:032x}", combine(bytes.len() as u64, &digests))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Any byte changed, a byte cut off or added, changes the checksum; the same bytes give the
    /// same one, whatever the chunk a byte is in and however many threads read them. (Chunks
    /// of 4 KiB read in blocks of 1,000 bytes here, so that a test builds files of a few chunks
    /// quickly.)
    #[test]
    fn the_checksum_covers_every_byte() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        const SMALL: u64 = 4096;
        let of_file = |path: &Path| in_chunks(path, SMALL, 1000, MAX_THREADS);
        let of_bytes = |bytes: &[u8]| of_bytes_in(bytes, SMALL);
        let chunk = SMALL as usize;
        let bytes: Vec<u8> = (0..9 * chunk + 1000).map(|i| (i % 251) as u8).collect();
        std::fs::write(&path, &bytes).unwrap();
        let whole = of_file(&path).unwrap();
        assert!(whole.starts_with("xxh3-128/64MiB:"), "{whole}");
        // The file's chunk size, not the test's: one chunk of 64 MiB here.
        assert_eq!(super::of_file(&path).unwrap(), super::of_bytes(&bytes));
        assert_eq!(
            super::of_bytes(&bytes),
            of_bytes_in(&bytes, bytes.len() as u64)
        );
        assert_eq!(whole.len(), "xxh3-128/64MiB:".len() + 32);
        assert_eq!(of_file(&path).unwrap(), whole);
        assert_eq!(
            in_chunks(&path, SMALL, 1000, 1).unwrap(),
            whole,
            "one thread"
        );
        assert_eq!(of_bytes(&bytes), whole);
        for at in [0, chunk - 1, chunk, 9 * chunk + 999] {
            let mut changed = bytes.clone();
            changed[at] ^= 1;
            std::fs::write(&path, &changed).unwrap();
            assert_ne!(of_file(&path).unwrap(), whole, "byte {at}");
        }
        // Two chunks swapped: each chunk's digest is the same, their order is not.
        let mut swapped = bytes[chunk..2 * chunk].to_vec();
        swapped.extend_from_slice(&bytes[..chunk]);
        swapped.extend_from_slice(&bytes[2 * chunk..]);
        assert_eq!(swapped.len(), bytes.len());
        std::fs::write(&path, &swapped).unwrap();
        assert_ne!(of_file(&path).unwrap(), whole);
        for cut in [bytes.len() - 1, 9 * chunk, 2 * chunk, chunk / 2] {
            std::fs::write(&path, &bytes[..cut]).unwrap();
            assert_ne!(of_file(&path).unwrap(), whole, "{cut} bytes");
            assert_eq!(of_file(&path).unwrap(), of_bytes(&bytes[..cut]));
        }
        let mut longer = bytes.clone();
        longer.push(0);
        std::fs::write(&path, &longer).unwrap();
        assert_ne!(of_file(&path).unwrap(), whole);
        std::fs::write(&path, b"").unwrap();
        assert_eq!(of_file(&path).unwrap(), of_bytes(b""));
        assert!(matches(&format!("{whole}\n"), &whole));
        // An older build's bare sha256 never matches.
        assert!(!matches(&"0".repeat(64), &whole));
    }
}
