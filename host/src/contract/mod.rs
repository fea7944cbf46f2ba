//! What a plugin may import and must export: the `retrieval-plugin` world of a supported version,
//! plus the WASI 0.2 interfaces a guest's runtime links — each granting nothing a plugin could
//! read or reach ([`wasi`]; the context itself is in `crate::capabilities`).

mod imports;
mod versions;
mod wasi;

pub use imports::{Grant, check, check_bytes, exports, grants, imports, imports_in};
pub use versions::{CONTRACT_INTERFACES, CONTRACT_PACKAGE, SUPPORTED_VERSIONS};
pub use wasi::{WASI_GRANTS, WASI_VERSION, wasi_grant};
