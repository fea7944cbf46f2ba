//! Names this build for the `turnstile_build_info` metric: the git commit and the wasmtime
//! version in `Cargo.lock`.

use std::path::{Path, PathBuf};

fn main() {
    let manifest_dir = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").expect("cargo sets it"));
    let workspace = manifest_dir
        .parent()
        .expect("server/ lives inside the workspace");
    println!(
        "cargo:rerun-if-changed={}",
        workspace.join("Cargo.lock").display()
    );
    println!(
        "cargo:rustc-env=TURNSTILE_GIT_COMMIT={}",
        git_commit(workspace)
    );
    println!(
        "cargo:rustc-env=TURNSTILE_WASMTIME_VERSION={}",
        locked_version(workspace, "wasmtime")
    );
}
/// The checked-out commit (short), or `unknown` outside a git checkout.
fn git_commit(workspace: &Path) -> String {
    let git_dir = workspace.join(".git");
    for watched in ["HEAD", "refs/heads", "packed-refs"] {
        println!("cargo:rerun-if-changed={}", git_dir.join(watched).display());
    }
    std::process::Command::new("git")
        .args(["rev-parse", "--short=12", "HEAD"])
        .current_dir(workspace)
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned())
        .filter(|c| !c.is_empty())
        .unwrap_or_else(|| "unknown".to_owned())
}

/// The version of `package` that `Cargo.lock` pins.
fn locked_version(workspace: &Path, package: &str) -> String {
    let lock = std::fs::read_to_string(workspace.join("Cargo.lock")).expect("read Cargo.lock");
    let lock: toml::Table = toml::from_str(&lock).expect("Cargo.lock is TOML");
    lock.get("package")
        .and_then(|p| p.as_array())
        .into_iter()
        .flatten()
        .find(|p| p.get("name").and_then(|n| n.as_str()) == Some(package))
        .and_then(|p| p.get("version").and_then(|v| v.as_str()))
        .unwrap_or("unknown")
        .to_owned()
}
