#!/usr/bin/env bash
# README's two commands as a newcomer runs them: a fresh clone, fresh rustup and cargo homes
# (the toolchain, the wasm32-wasip2 target and every crate downloaded again), and whatever Debian
# packages the machine has (run `apt-get remove -y prometheus chromium redis-server` first to
# measure a machine without them: tests/setup.sh installs them as root).
#
#   bench/setup-time.sh [REPO] [WORKDIR]
#
# Prints the time of each step, and which crates the second command compiled that the first had
# compiled too (none is the goal: one feature set across both; test targets aside).
set -euo pipefail
repo="${1:-$(cd "$(dirname "$0")/.." && pwd)}"
work="${2:-$(mktemp -d /tmp/setup-time.XXXXXX)}"
mkdir -p "$work"
export RUSTUP_HOME="$work/rustup" CARGO_HOME="$work/cargo"
mkdir -p "$CARGO_HOME/bin"
# A fresh rustup home needs rustup itself: the machine's binary, from an empty home.
ln -sf "$(command -v rustup)" "$CARGO_HOME/bin/rustup"
for tool in cargo rustc; do ln -sf rustup "$CARGO_HOME/bin/$tool"; done
export PATH="$CARGO_HOME/bin:$PATH" RUSTUP_AUTO_INSTALL=0
unset CARGO_TARGET_DIR CARGO_BUILD_BUILD_DIR TURNSTILE_TOOLCHAINS
git clone --quiet "$repo" "$work/turnstile"
cd "$work/turnstile"
now() { date +%s.%N; }
since() { python3 -c "import sys; s=float(sys.argv[2])-float(sys.argv[1]); print(f'{int(s//60)} min {s%60:04.1f} s')" "$1" "$(now)"; }

# 1. README's first command, until the server answers a question.
start=$(now)
port=18480
(rustup toolchain install 1.95.0 --profile minimal --target wasm32-wasip2 \
    && cargo run -p turnstile-cli -- serve --listen "127.0.0.1:$port") >"$work/first.log" 2>&1 &
server=$!
until curl -sf "127.0.0.1:$port/retrieve" -H 'content-type: application/json' \
        -d '{"question": "How do I parse command line arguments?", "limit": 3}' >"$work/answer.json" 2>/dev/null; do
    if ! kill -0 "$server" 2>/dev/null; then echo "the first command stopped:"; tail -20 "$work/first.log"; exit 1; fi
    sleep 2
done
first=$(since "$start")
pkill -TERM -f "target/debug/turnstile serve --listen 127.0.0.1:$port" || true
wait "$server" 2>/dev/null || true
echo "first command, until an answer: $first ($(head -c 120 "$work/answer.json")…)"

# 2. README's second command.
start=$(now)
set +e
(rustup toolchain install 1.95.0 --profile minimal --component clippy,rustfmt --target wasm32-wasip2 \
    && tests/setup.sh && cargo test --workspace --locked) >"$work/second.log" 2>&1
status=$?
set -e
second=$(since "$start")
echo "second command: $second (exit $status; $(grep -c '^test .* ok$' "$work/second.log") tests ok, $(grep -c 'FAILED' "$work/second.log") FAILED lines)"

compiled() { sed -n 's/^ *Compiling \([^ ]*\) v\([^ ]*\).*/\1 \2/p' "$1" | sort -u; }
# The workspace's own crates are compiled again as test targets (`cfg(test)`): only dependencies
# count here.
members=$(cargo metadata --no-deps --format-version 1 --offline 2>/dev/null \
    | python3 -c 'import json,sys; print("\n".join(p["name"] for p in json.load(sys.stdin)["packages"]))')
again=$(comm -12 <(compiled "$work/first.log") <(compiled "$work/second.log") \
    | grep -vxF -f <(echo "$members" | sed 's/$/ 0.1.0/') || true)
echo "dependencies compiled by both commands: $(echo "$again" | grep -c . || true)"
echo "$again" | sed 's/^/  /'
echo "logs: $work/first.log, $work/second.log"
