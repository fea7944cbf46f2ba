#!/usr/bin/env bash
# Runs every benchmark (none of them runs in CI): criterion micro-benchmarks, the FTS5 ceiling,
# waiter memory, server memory with 10,000 waiting requests, hot-swap latency, the side-by-side comparison with the
# Python reference service (one question, then the question mix), what the live view and the global
# limit cost, and the 20-slot / 2 s / 60-user load demonstration.
# Everything stays on 127.0.0.1. Results: see docs/BENCHMARKS.md for where each lands.
set -euo pipefail
cd "$(dirname "$0")/.."

cargo build --release -p turnstile-cli
cargo xtask plugins   # every component at target/plugins/NAME.wasm
cargo bench -p turnstile-gate --bench gate
cargo bench -p turnstile-gate --bench waiter_memory
cargo bench -p turnstile-host --bench plugin
cargo bench -p turnstile-corpus --bench fts5_ceiling
cargo bench -p turnstile-corpus --bench term_index
cargo bench -p turnstile-corpus --bench semantic
cargo bench -p turnstile-server --bench metrics
cargo bench -p turnstile-global --bench admissions   # needs redis-server (tests/setup.sh)

python3 bench/waiting-memory.py --binary target/release/turnstile --waiters 10000
bench/swap-latency.sh

cp target/release/turnstile /tmp/turnstile-bench-bin
bench/peer-compare.sh
MIX=bench/mix.jsonl bench/peer-compare.sh   # needs wrk
bench/corpus-scale.sh   # needs wrk; the shipped corpus beside it replicated 16 times
python3 bench/live-cost.py
python3 bench/global-cost.py

port=18181
target/release/turnstile serve --listen 127.0.0.1:$port --plugin target/plugins/delay.wasm \
  --plugin-config delay_ms=2000 --max-active 20 --max-waiting 1000 --wait-ms 300000 &
server=$!
trap 'kill $server 2>/dev/null || true' EXIT
until curl -sf http://127.0.0.1:$port/readyz >/dev/null; do sleep 0.2; done
target/release/turnstile load --url http://127.0.0.1:$port/retrieve --users 60 --spawn-rate 5 \
  --duration 60 --output target/bench/load-demo
