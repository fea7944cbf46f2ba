//! sha256, as turnstile names what it loads: the digest of bytes ([`sha256_hex`]) and a pin an
//! operator gives (`--plugin-sha256`, `--corpus-sha256`, a swap's `sha256`: [`Sha256Hex`]).

use sha2::{Digest, Sha256};

/// sha256 of `bytes`, lowercase hex.
pub fn sha256_hex(bytes: &[u8]) -> String {
    hex::encode(Sha256::digest(bytes))
}

/// A sha256 pin: 64 hex digits, kept lowercase.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Sha256Hex(String);

/// A pin that is not 64 hex digits.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("expected 64 hex digits, got {0:?}")]
pub struct BadSha256(pub String);

impl std::str::FromStr for Sha256Hex {
    type Err = BadSha256;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        if s.len() == 64 && s.bytes().all(|b| b.is_ascii_hexdigit()) {
            Ok(Self(s.to_ascii_lowercase()))
        } else {
            Err(BadSha256(s.to_owned()))
        }
    }
}

impl Sha256Hex {
    /// The digest in lowercase hex.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Display for Sha256Hex {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sha256_pins_are_64_hex_digits_kept_lowercase() {
        let upper = "AB".repeat(32);
        assert_eq!(
            upper.parse::<Sha256Hex>().unwrap().as_str(),
            "ab".repeat(32)
        );
        assert!("xyz".parse::<Sha256Hex>().is_err());
        assert!("a".repeat(63).parse::<Sha256Hex>().is_err());
    }
}
