#!/usr/bin/env bash
# Runs the fuzz targets, each for a set time, as hyper and wasmtime do with cargo-fuzz
# (libFuzzer). Not in CI: fuzzing takes hours, not minutes (`cargo test` runs every kept case).
# What each target checks is in the `fuzzing` module of the crate it fuzzes (`turnstile_server`,
# `turnstile_host`, `turnstile_corpus`, `turnstile_ingest`).
#
#   fuzz/run.sh [SECONDS_PER_TARGET] [TARGET...]     (default: 300 s, every target)
#
# Each target starts from its seeds (`fuzz/seeds/T/`) and every case it ever failed on
# (`fuzz/regressions/T/`), and grows a working corpus in `fuzz/corpus/T/` (not committed). An
# input that fails is written to `fuzz/artifacts/T/`; once the bug is fixed, copy it to
# `fuzz/regressions/T/`, where `cargo test` runs it on stable. The script runs every target and
# exits non-zero if any failed.
#
# No sanitizer (so no nightly toolchain): the code under test is safe Rust (the workspace
# denies `unsafe`), so what there is to find is a panic, an overflow (debug assertions are on)
# or a broken invariant — and AddressSanitizer would double the build and slow every run.
set -euo pipefail
cd "$(dirname "$0")"

seconds="${1:-300}"
shift || true
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(retrieve_body chat_body swap_body config_file plugin_result corpus_file ingest_file headers)

# The project's own toolchain (rust-toolchain.toml): without a sanitizer, libFuzzer's coverage
# instrumentation needs only stable flags (-Cpasses=sancov-module, -Cllvm-args). cargo-fuzz from
# crates.io, pinned.
command -v cargo-fuzz >/dev/null || cargo install cargo-fuzz --locked --version 0.13.2
# Debug assertions (overflow checks) on; 16 codegen units: wasmtime and Cranelift are built
# too (the host links them), and with cargo-fuzz's default of 1 that build takes most of an hour
# on 2 cores.
build=(--sanitizer none --debug-assertions --codegen-units 16)
# One target directory with the workspace's (its own folder: other flags, other toolchain).
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$PWD/../target}/fuzz"
cargo fuzz build "${build[@]}"

max_len() {
    case "$1" in
        retrieve_body) echo 8192 ;;  # MAX_BODY_BYTES
        swap_body) echo 65536 ;;     # MAX_ADMIN_BODY_BYTES
        config_file) echo 16384 ;;
        plugin_result) echo 65536 ;;
        corpus_file) echo 65536 ;;   # inflated as gzip, up to its 256 KiB bound
        ingest_file) echo 262144 ;;  # a document's nesting and sections need room
        headers) echo 8192 ;;        # hyper's default header size is larger; values are short
    esac
}

# Longest a single input may take, in seconds, before libFuzzer calls it a hang (its default is
# 20 minutes): a reader or the splitter must stay linear in its input.
timeout_of() {
    case "$1" in
        ingest_file | corpus_file) echo 10 ;;
        *) echo 1200 ;;  # libFuzzer's default
    esac
}

failed=()
for target in "${targets[@]}"; do
    mkdir -p "corpus/$target" "artifacts/$target" "regressions/$target"
    echo "== $target: ${seconds} s ($(date -u +%H:%M:%S))"
    if ! cargo fuzz run "${build[@]}" "$target" \
        "corpus/$target" "seeds/$target" "regressions/$target" -- \
        -max_total_time="$seconds" -max_len="$(max_len "$target")" -timeout="$(timeout_of "$target")" \
        -artifact_prefix="artifacts/$target/" -print_final_stats=1; then
        failed+=("$target")
    fi
done
if [ ${#failed[@]} -gt 0 ]; then
    echo "failed: ${failed[*]} (inputs in fuzz/artifacts/)" >&2
    exit 1
fi
echo "no target failed"
