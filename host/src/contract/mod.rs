//! What a plugin may import and must export: the `retrieval-plugin` world of a supported version,
//! plus the WASI interfaces a guest's standard library links — each of which grants nothing here
//! (see `crate::capabilities`).

mod imports;
mod versions;

pub use imports::{check, exports, imports};
pub use versions::{CONTRACT_INTERFACES, CONTRACT_PACKAGE, SUPPORTED_VERSIONS};
