//! Builds every guest component — the retrieval plugins in `plugins/` and the trusted fixtures in
//! `fixtures/` — with a nested `cargo build --target wasm32-wasip2`, then:
//! - copies each to `<target dir>/plugins/NAME.wasm`, the stable path tests, docs and operators use;
//! - writes `$OUT_DIR/plugins/NAME.wasm` (the embedded default is taken from there);
//! - generates `$OUT_DIR/components.rs` with the path of each, for tests.
//!
//! The nested build uses its own target directory under `OUT_DIR`: sharing the outer one would
//! deadlock on cargo's build-directory lock.

use std::path::{Path, PathBuf};
use std::process::Command;

const TARGET: &str = "wasm32-wasip2";

fn main() {
    let manifest_dir = PathBuf::from(env("CARGO_MANIFEST_DIR"));
    let root = manifest_dir
        .parent()
        .expect("host/ lives inside the workspace")
        .to_path_buf();
    let out_dir = PathBuf::from(env("OUT_DIR"));
    for watched in ["wit", "plugins", "fixtures", "Cargo.lock"] {
        println!("cargo:rerun-if-changed={}", root.join(watched).display());
    }
    println!("cargo:rerun-if-env-changed=CARGO_TARGET_DIR");

    let guests: Vec<String> = ["plugins", "fixtures"]
        .iter()
        .flat_map(|dir| guest_crates(&root.join(dir)))
        .collect();

    ensure_target_installed();

    let guest_target = out_dir.join("guest-target");
    let mut cmd = Command::new(env("CARGO"));
    cmd.current_dir(&root)
        .args([
            "build",
            "--release",
            "--locked",
            "--target",
            TARGET,
            "--target-dir",
        ])
        .arg(&guest_target);
    for name in &guests {
        cmd.args(["-p", name]);
    }
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
    let status = cmd.status().expect("run cargo for the guest components");
    assert!(status.success(), "building the guest components failed");

    let published = workspace_target_dir(&root).join("plugins");
    let embedded = out_dir.join("plugins");
    std::fs::create_dir_all(&published).expect("create target/plugins");
    std::fs::create_dir_all(&embedded).expect("create OUT_DIR/plugins");
    let mut consts = String::new();
    for name in &guests {
        let built = guest_target
            .join(TARGET)
            .join("release")
            .join(format!("{}.wasm", name.replace('-', "_")));
        let wasm =
            std::fs::read(&built).unwrap_or_else(|e| panic!("read {}: {e}", built.display()));
        write_if_changed(&embedded.join(format!("{name}.wasm")), &wasm);
        let path = published.join(format!("{name}.wasm"));
        write_if_changed(&path, &wasm);
        consts.push_str(&format!(
            "/// `target/plugins/{name}.wasm`, built from the `{name}` guest crate.\npub const {}: &str = {:?};\n",
            name.to_uppercase().replace('-', "_"),
            path.display().to_string()
        ));
    }
    std::fs::write(out_dir.join("components.rs"), consts).expect("write components.rs");
}

fn env(name: &str) -> String {
    std::env::var(name).unwrap_or_else(|_| panic!("cargo sets {name}"))
}

/// Package names of the guest crates directly under `dir` (one folder each).
fn guest_crates(dir: &Path) -> Vec<String> {
    let mut names = Vec::new();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return names;
    };
    for entry in entries.flatten() {
        let manifest = entry.path().join("Cargo.toml");
        let Ok(text) = std::fs::read_to_string(&manifest) else {
            continue;
        };
        let name = text
            .lines()
            .find_map(|l| l.trim().strip_prefix("name = "))
            .map(|v| v.trim_matches('"').to_owned())
            .unwrap_or_else(|| panic!("{} has no package name", manifest.display()));
        names.push(name);
    }
    names.sort();
    names
}

/// The outer build's target directory: `CARGO_TARGET_DIR` if set, else `<workspace>/target`.
fn workspace_target_dir(root: &Path) -> PathBuf {
    match std::env::var_os("CARGO_TARGET_DIR") {
        Some(dir) => root.join(dir),
        None => root.join("target"),
    }
}

/// A fresh machine has the toolchain without the wasm target (and RUSTUP_AUTO_INSTALL=0):
/// add it, or stop with the one command that fixes it.
fn ensure_target_installed() {
    let rustc = std::env::var("RUSTC").unwrap_or_else(|_| "rustc".into());
    let libdir = Command::new(&rustc)
        .args(["--print", "target-libdir", "--target", TARGET])
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| PathBuf::from(String::from_utf8_lossy(&o.stdout).trim()));
    if libdir.as_deref().is_some_and(Path::exists) {
        return;
    }
    println!("cargo:warning=installing the {TARGET} target: rustup target add {TARGET}");
    let added = Command::new("rustup")
        .args(["target", "add", TARGET])
        .status()
        .is_ok_and(|s| s.success());
    assert!(
        added,
        "the {TARGET} Rust target is missing and could not be installed; run: rustup target add {TARGET}"
    );
}

fn write_if_changed(path: &Path, bytes: &[u8]) {
    if std::fs::read(path).ok().as_deref() != Some(bytes) {
        std::fs::write(path, bytes).unwrap_or_else(|e| panic!("write {}: {e}", path.display()));
    }
}
