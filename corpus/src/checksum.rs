//! The checksum of a built index file, written beside it when it is built and checked every
//! time it is reused: xxh3-128 over every byte of the file, read in large blocks. Not a defence
//! against someone who can write the cache (they could rewrite the checksum too), but against a
//! torn, truncated or damaged file: any change to any page — any table — changes it. At a few
//! GB/s it costs a fraction of a second where sha256 took seconds at 100,000 passages.

use std::io::Read;
use std::path::Path;

use xxhash_rust::xxh3::Xxh3;

/// What the checksum file says before the digest: a file written by another algorithm (an older
/// build's bare sha256) never matches, and its index is rebuilt.
const ALGORITHM: &str = "xxh3-128";

/// The size of the blocks a file is read in.
const BLOCK: usize = 4 << 20;

/// The checksum of the whole file at `path`, as the checksum file records it:
/// `xxh3-128:<32 lowercase hex digits>`.
pub(crate) fn of_file(path: &Path) -> std::io::Result<String> {
    let mut file = std::fs::File::open(path)?;
    let mut hasher = Xxh3::new();
    let mut block = vec![0u8; BLOCK];
    loop {
        let n = match file.read(&mut block) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        hasher.update(block.get(..n).unwrap_or_default());
    }
    Ok(format!("{ALGORITHM}:{:032x}", hasher.digest128()))
}

/// Whether the recorded checksum `recorded` (the checksum file's text) is the one `actual`
/// computed now: surrounding white space aside (a checksum file edited by hand), the same.
pub(crate) fn matches(recorded: &str, actual: &str) -> bool {
    recorded.trim() == actual
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Any byte changed, a byte cut off or added, changes the checksum; the same bytes give the
    /// same one, across block boundaries.
    #[test]
    fn the_checksum_covers_every_byte() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        let bytes: Vec<u8> = (0..BLOCK + 1000).map(|i| (i % 251) as u8).collect();
        std::fs::write(&path, &bytes).unwrap();
        let whole = of_file(&path).unwrap();
        assert!(whole.starts_with("xxh3-128:"), "{whole}");
        assert_eq!(whole.len(), "xxh3-128:".len() + 32);
        assert_eq!(of_file(&path).unwrap(), whole);
        assert_eq!(
            whole,
            format!("xxh3-128:{:032x}", xxhash_rust::xxh3::xxh3_128(&bytes))
        );
        for at in [0, BLOCK - 1, BLOCK, bytes.len() - 1] {
            let mut changed = bytes.clone();
            changed[at] ^= 1;
            std::fs::write(&path, &changed).unwrap();
            assert_ne!(of_file(&path).unwrap(), whole, "byte {at}");
        }
        std::fs::write(&path, &bytes[..bytes.len() - 1]).unwrap();
        assert_ne!(of_file(&path).unwrap(), whole);
        let mut longer = bytes.clone();
        longer.push(0);
        std::fs::write(&path, &longer).unwrap();
        assert_ne!(of_file(&path).unwrap(), whole);
        assert!(matches(&format!("{whole}\n"), &whole));
        // An older build's bare sha256 never matches.
        assert!(!matches(&"0".repeat(64), &whole));
    }
}
