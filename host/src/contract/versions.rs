//! The contract's name and the versions of it this host serves (`wit/`, and the older texts in
//! `wit/v0.1.0/` and `wit/v0.1.1/`): each version only adds to the one before, so a component built
//! against an older one links to the newest interfaces by semver.

/// The contract's WIT package.
pub const CONTRACT_PACKAGE: &str = "turnstile:retrieval";
/// Versions of the contract this host serves.
pub const SUPPORTED_VERSIONS: &[&str] = &["0.1.0", "0.1.1", "0.1.2"];

/// The contract's interfaces.
pub const CONTRACT_INTERFACES: &[&str] = &["corpus", "embeddings", "config", "log"];
