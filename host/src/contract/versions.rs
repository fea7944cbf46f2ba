//! The contract's name and the versions of it this host serves (`wit/`, and the older texts in
//! `wit/v0.1.0/` … `wit/v0.1.3/`): each version only adds to the one before, so a component built
//! against an older one links to the newest interfaces by semver. WASI is served at 0.2 (any
//! 0.2.x: later patch versions only add); another version of either is refused at load.

/// The contract's WIT package.
pub const CONTRACT_PACKAGE: &str = "turnstile:retrieval";
/// Versions of the contract this host serves.
pub const SUPPORTED_VERSIONS: &[&str] = &["0.1.0", "0.1.1", "0.1.2", "0.1.3", "0.1.4"];
/// The WASI major.minor version the host links (any 0.2.x).
pub const WASI_VERSION: &str = "0.2";

/// Whether `interface` (without version) is served at `version`: a contract interface at a
/// supported version, a WASI interface at 0.2.x. Nothing else is (another package's interface
/// has no version this host serves).
pub fn version_served(interface: &str, version: &str) -> bool {
    if interface.starts_with(CONTRACT_PACKAGE) {
        SUPPORTED_VERSIONS.contains(&version)
    } else if interface.starts_with("wasi:") {
        version.rsplit_once('.').map_or(version, |(minor, _)| minor) == WASI_VERSION
    } else {
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_supported_versions_are_served() {
        assert!(version_served("wasi:filesystem/types", "0.2.9"));
        assert!(version_served("wasi:io/streams", "0.2.0"));
        assert!(!version_served("wasi:io/streams", "0.3.0"));
        assert!(!version_served("wasi:io/streams", "0.1.0"));
        assert!(!version_served("wasi:io/streams", ""));
        assert!(version_served("turnstile:retrieval/corpus", "0.1.1"));
        assert!(!version_served("turnstile:retrieval/corpus", "0.2.0"));
        assert!(!version_served("example:secrets/vault", "0.2.0"));
    }
}
