//! Builds the shipped retrieval plugins — the default, hybrid one (`plugins/retrieval-hybrid`)
//! and the lexical one (`plugins/retrieval`) — to be embedded in the host (test fixtures are
//! built by `fixtures/artifacts` for tests only, and `cargo xtask plugins` builds every component
//! for operators).

use std::path::{Path, PathBuf};

fn main() {
    let manifest_dir = PathBuf::from(env("CARGO_MANIFEST_DIR"));
    let workspace = manifest_dir
        .parent()
        .expect("host/ lives inside the workspace");
    let out_dir = PathBuf::from(env("OUT_DIR"));
    turnstile_guest_build::rerun_if_changed(
        workspace,
        &[
            workspace.join("plugins/retrieval"),
            workspace.join("plugins/retrieval-hybrid"),
            workspace.join("plugins/query"),
        ],
    );
    let built = turnstile_guest_build::build(
        Path::new(&env("CARGO")),
        workspace,
        &["retrieval-hybrid", "retrieval"],
        &turnstile_guest_build::guest_target_dir(&out_dir),
    )
    .unwrap_or_else(|e| {
        // One line a person can act on (the missing target says what installs it), not a panic.
        eprintln!("error: the embedded plugins cannot be built: {e}");
        std::process::exit(1)
    });
    for guest in built {
        std::fs::copy(&guest.path, out_dir.join(format!("{}.wasm", guest.name)))
            .unwrap_or_else(|e| panic!("copy {}: {e}", guest.path.display()));
    }
}

fn env(name: &str) -> String {
    std::env::var(name).unwrap_or_else(|_| panic!("cargo sets {name}"))
}
