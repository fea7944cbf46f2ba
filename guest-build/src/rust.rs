//! Rust guests: crates of this workspace compiled to `wasm32-wasip2` by a nested cargo.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::error::{Guest, GuestBuildError};

/// The guests' compilation target.
pub const TARGET: &str = "wasm32-wasip2";

/// Builds `packages` (workspace crates under `workspace`) in release mode for [`TARGET`] into
/// `target_dir`, and returns where each component is. `cargo` is the cargo to run (a build
/// script passes its `CARGO`).
pub fn build(
    cargo: &Path,
    workspace: &Path,
    packages: &[&str],
    target_dir: &Path,
) -> Result<Vec<Guest>, GuestBuildError> {
    if !target_installed() {
        return Err(GuestBuildError::TargetMissing);
    }
    let mut cmd = Command::new(cargo);
    cmd.current_dir(workspace)
        .args(["build", "--release", "--locked", "--target", TARGET])
        .arg("--target-dir")
        .arg(target_dir);
    for name in packages {
        cmd.args(["-p", name]);
    }
    // The outer build's flags and wrappers (clippy's driver, say) are for host code, not guests.
    for var in [
        "CARGO_ENCODED_RUSTFLAGS",
        "RUSTFLAGS",
        "RUSTC_WRAPPER",
        "RUSTC_WORKSPACE_WRAPPER",
        "CARGO_BUILD_TARGET",
        "CARGO_TARGET_DIR",
        "CARGO_BUILD_RUSTFLAGS",
    ] {
        cmd.env_remove(var);
    }
    let status = cmd.status().map_err(GuestBuildError::Spawn)?;
    if !status.success() {
        return Err(GuestBuildError::Failed(status));
    }
    packages
        .iter()
        .map(|name| {
            let path = target_dir
                .join(TARGET)
                .join("release")
                .join(format!("{}.wasm", name.replace('-', "_")));
            if path.is_file() {
                Ok(Guest {
                    name: (*name).to_owned(),
                    path,
                })
            } else {
                Err(GuestBuildError::Missing(path))
            }
        })
        .collect()
}

/// Whether the toolchain has the guests' standard library (the build adds nothing by itself: a
/// fresh machine gets it from README's `rustup toolchain install … --target wasm32-wasip2`).
fn target_installed() -> bool {
    let rustc = std::env::var_os("RUSTC").unwrap_or_else(|| "rustc".into());
    Command::new(rustc)
        .args(["--print", "target-libdir", "--target", TARGET])
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| PathBuf::from(String::from_utf8_lossy(&o.stdout).trim()))
        .is_some_and(|dir| dir.exists())
}

/// Where every guest is built: `guests/` in the workspace's target directory, found from a build
/// script's `OUT_DIR`, `<target>/[<triple>/]<profile>/build/<package>-<hash>/out` (the triple's
/// level is there when the build names `--target`, and is then the build script's `TARGET`).
/// Every build script and profile so shares one guest build. (Cargo's `CACHEDIR.TAG` does not
/// tell: cargo writes it only when it creates the target directory itself, and `tests/setup.sh`
/// creates it first for the toolchains.)
pub fn guest_target_dir(out_dir: &Path) -> PathBuf {
    guests_beside(out_dir, std::env::var("TARGET").ok().as_deref())
}

fn guests_beside(out_dir: &Path, triple: Option<&str>) -> PathBuf {
    out_dir
        .ancestors()
        .nth(4)
        .map(|dir| match (dir.file_name(), triple) {
            (Some(name), Some(triple)) if name == triple => dir.parent().unwrap_or(dir),
            _ => dir,
        })
        .map_or_else(
            || out_dir.join("guest-target"),
            |target| target.join("guests"),
        )
}

/// The cargo directives that rerun a build script when a guest's inputs change: its crate, the
/// contract it is built against, the lock file and the workspace manifest (profiles).
pub fn rerun_if_changed(workspace: &Path, guest_dirs: &[PathBuf]) {
    for dir in guest_dirs {
        println!("cargo:rerun-if-changed={}", dir.display());
    }
    for input in ["wit", "Cargo.lock", "Cargo.toml"] {
        println!("cargo:rerun-if-changed={}", workspace.join(input).display());
    }
}

#[cfg(test)]
mod tests {
    use super::guests_beside;
    use std::path::Path;

    #[test]
    fn every_profile_and_target_layout_shares_one_guest_directory() {
        let triple = "x86_64-unknown-linux-gnu";
        for out in [
            "/w/target/debug/build/host-1a2b/out",
            "/w/target/release/build/fixtures-3c4d/out",
            "/w/target/x86_64-unknown-linux-gnu/debug/build/host-5e6f/out",
        ] {
            assert_eq!(
                guests_beside(Path::new(out), Some(triple)),
                Path::new("/w/target/guests"),
                "{out}"
            );
        }
        assert_eq!(
            guests_beside(Path::new("out"), Some(triple)),
            Path::new("out/guest-target")
        );
    }
}
