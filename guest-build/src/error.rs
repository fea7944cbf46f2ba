//! What a guest build gives, and what can stop it.

use std::path::PathBuf;

/// What can stop a guest build.
#[derive(Debug, thiserror::Error)]
pub enum GuestBuildError {
    /// The `wasm32-wasip2` standard library (`crate::TARGET`) is not installed for this toolchain.
    #[error("the wasm32-wasip2 Rust target is not installed; run: rustup target add wasm32-wasip2")]
    TargetMissing,
    /// `cargo` could not be started.
    #[error("cannot run cargo: {0}")]
    Spawn(#[source] std::io::Error),
    /// The nested build failed (its output says why).
    #[error("building the guest components failed ({0})")]
    Failed(std::process::ExitStatus),
    /// A built component is not where its build puts it.
    #[error("{} was not built", .0.display())]
    Missing(PathBuf),
    /// The WIT folder a guest is built against could not be written.
    #[error("{}: {source}", .path.display())]
    Wit {
        /// The folder.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The toolchain of a Python or JavaScript guest is not installed.
    #[error("{tool} is not installed (looked for {}); run: {install}", .path.display())]
    ToolchainMissing {
        /// `componentize-py` or `componentize-js`.
        tool: &'static str,
        /// Where it was looked for.
        path: PathBuf,
        /// The command that installs it.
        install: &'static str,
    },
}

/// One built component.
#[derive(Debug, Clone)]
pub struct Guest {
    /// The package name, e.g. `delay`.
    pub name: String,
    /// The `.wasm` component.
    pub path: PathBuf,
}
