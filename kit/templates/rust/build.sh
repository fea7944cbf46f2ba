#!/usr/bin/env bash
# Builds the plugin: target/{{name}}.wasm, a WebAssembly component of turnstile's
# `retrieval-plugin` world, compiled from src/ against the WIT the host wrote into wit/.
# Pinned: wit-bindgen in Cargo.toml, every dependency in Cargo.lock (--locked).
set -euo pipefail
cd "$(dirname "$0")"

die() { echo "build.sh: $*" >&2; exit 1; }

[ -f wit/retrieval.wit ] ||
    die "wit/retrieval.wit is missing: it is the contract, written by \`turnstile new plugin\` (copy it from the turnstile you target)"
command -v cargo >/dev/null ||
    die "cargo not found; install Rust: curl --proto '=https' --tlsv1.2 -sSf https://sh.rustup.rs | sh -s -- --target wasm32-wasip2"
# Rust 1.85 or later: the crate is edition 2024 (stable since 1.85); an older cargo stops at
# Cargo.toml with a message about a feature `edition2024`, so the version is checked first.
version=$(rustc --version) || die "rustc does not run; install Rust: https://rustup.rs"
release=$(echo "$version" | sed -n 's/^rustc \([0-9][0-9]*\)\.\([0-9][0-9]*\)\..*/\1 \2/p')
read -r major minor <<<"${release:-0 0}"
[ "$major" -gt 1 ] || { [ "$major" -eq 1 ] && [ "$minor" -ge 85 ]; } ||
    die "$version is too old: this crate is edition 2024, which needs Rust 1.85 or later (tested with 1.95.0); update: rustup update stable"
# wasm32-wasip2 is the target whose linker emits a component. Checked up front: cargo's own
# message for a missing target is a page of "can't find crate for `core`".
[ -d "$(rustc --print sysroot)/lib/rustlib/wasm32-wasip2" ] ||
    die "the wasm32-wasip2 target is not installed for $(rustc --version); install it: rustup target add wasm32-wasip2"

cargo build --release --locked --target wasm32-wasip2
mkdir -p target
cp "${CARGO_TARGET_DIR:-target}/wasm32-wasip2/release/{{crate_name}}.wasm" target/{{name}}.wasm
echo "built target/{{name}}.wasm ($(wc -c < target/{{name}}.wasm) bytes)"
