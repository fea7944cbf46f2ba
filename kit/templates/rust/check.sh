#!/usr/bin/env bash
# Checks the built plugin against the host: `turnstile check` (the contract, behaviour on probe
# questions, adversarial input, memory) must pass; then `turnstile eval` scores it on
# questions.jsonl (recall@1, recall@5, MRR@10, nDCG@10, latency, misses) — a report, not a gate.
# The turnstile binary: $TURNSTILE, else `turnstile` on PATH. Extra arguments go to both commands
# (e.g. --plugin-config KEY=VALUE, --cache-dir DIR).
set -euo pipefail
cd "$(dirname "$0")"

die() { echo "check.sh: $*" >&2; exit 1; }

turnstile="${TURNSTILE:-turnstile}"
command -v "$turnstile" >/dev/null ||
    die "no turnstile binary: put it on PATH or set TURNSTILE=/path/to/turnstile (in a turnstile checkout: cargo build --release -p turnstile-cli, then target/release/turnstile)"
plugin=target/{{name}}.wasm
[ -f "$plugin" ] || die "$plugin not found: run ./build.sh first"

"$turnstile" check "$plugin" "$@" || die "turnstile check failed (see the FAIL lines above)"
"$turnstile" eval questions.jsonl --plugin "$plugin" "$@"
