//! What a plugin may import and must export: the `retrieval-plugin` world of a supported version,
//! and only interfaces some capability serves (`crate::capabilities`: WASI 0.2 granting nothing,
//! the contract's own) — at a version this host serves ([`versions`]).

mod imports;
mod versions;

pub use imports::{Grant, check, check_bytes, exports, grants, imports, imports_in};
pub use versions::{CONTRACT_PACKAGE, SUPPORTED_VERSIONS, WASI_VERSION, version_served};
