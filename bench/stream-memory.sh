#!/usr/bin/env bash
# What 1,000 streaming clients cost the server in memory: `turnstile serve --max-active 20
# --max-waiting 1000` with the `rag` plugin in front of the streaming test upstream (first token
# after 200 ms, 60 tokens over 1.8 s), and 1,000 users of `turnstile load --chat --stream` —
# 20 streams running, the other 980 requests queued, every connection open. The server's RSS
# (VmRSS of /proc/PID/status) is read idle (fresh, and again after a warm-up of 20 streams for
# 5 s) and then once a second for SAMPLE seconds once the gate holds 20 active and 980 waiting.
#
#   bench/stream-memory.sh [RUNS=3] [SAMPLE=20] [OUT=target/bench/stream-memory]
#
# Each run has a fresh server; prints one line per run (MiB) and writes OUT/runs.jsonl.
# Needs a release build (cargo build --release -p turnstile-cli), target/plugins/rag.wasm
# (cargo xtask plugins), python3, curl, and 2,000+ file descriptors (raised here with ulimit).
set -euo pipefail
cd "$(dirname "$0")/.."
runs="${1:-3}"
sample="${2:-20}"
out="${3:-target/bench/stream-memory}"
bin="${TURNSTILE_BIN:-target/release/turnstile}"
rag="${RAG_WASM:-target/plugins/rag.wasm}"
users=1000
mkdir -p "$out"
rm -f "$out/runs.jsonl"
[ -x "$bin" ] || { echo "build it first: cargo build --release -p turnstile-cli" >&2; exit 1; }
[ -f "$rag" ] || { echo "build it first: cargo xtask plugins" >&2; exit 1; }
# Each user is a connection: the load generator and the server need 1,000+ descriptors each.
ulimit -n "$(ulimit -Hn)"
[ "$(ulimit -n)" = unlimited ] || [ "$(ulimit -n)" -ge 2100 ] ||
    { echo "need 2,100 open files, the hard limit is $(ulimit -Hn)" >&2; exit 1; }

pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; }
trap cleanup EXIT

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
wait_for() { for _ in $(seq 1 600); do curl -sf "$1" >/dev/null 2>&1 && return 0; sleep 0.1; done; echo "never up: $1" >&2; return 1; }
rss_kib() { awk '/^VmRSS:/ {print $2}' "/proc/$1/status"; }
gate() { curl -sf "$1/state" | python3 -c 'import json,sys; s=json.load(sys.stdin); print(s["active"], s["waiting"])'; }

fifo="$out/upstream.fifo"
rm -f "$fifo"; mkfifo "$fifo"
python3 tests/upstream/upstream.py --port 0 --latency-ms 200 --stream-ms 1800 --answer-words 60 \
    >"$fifo" 2>/dev/null &
pids+=($!)
read -r line <"$fifo"
upstream="${line#listening on }"

for run in $(seq 1 "$runs"); do
    port=$(free_port)
    base="http://127.0.0.1:$port"
    "$bin" serve --listen "127.0.0.1:$port" --plugin "$rag" --max-active 20 --max-waiting 1000 \
        --wait-ms 300000 --max-connections 2048 --outbound-allow "$upstream" \
        --plugin-config "upstream=$upstream" --plugin-config model=demo \
        --access-log false 2>>"$out/serve-$run.log" &
    server=$!
    pids+=("$server")
    wait_for "$base/readyz"
    sleep 2
    fresh=$(rss_kib "$server")
    "$bin" load --chat --stream --url "$base" --users 20 --spawn-rate 100 --duration 5 \
        --timeout-s 60 --output "$out/warm-$run" --quiet >/dev/null
    sleep 2
    warm=$(rss_kib "$server")

    "$bin" load --chat --stream --url "$base" --users "$users" --spawn-rate 500 --duration 3600 \
        --timeout-s 3600 --output "$out/load-$run" --quiet >/dev/null 2>"$out/load-$run.log" &
    loader=$!
    pids+=("$loader")
    # Until every user's request is at the gate: 20 running, 980 waiting.
    for _ in $(seq 1 300); do
        read -r active waiting < <(gate "$base")
        [ "$active" -eq 20 ] && [ "$waiting" -ge $((users - 20)) ] && break
        sleep 0.2
    done
    samples=()
    states=()
    for _ in $(seq 1 "$sample"); do
        samples+=("$(rss_kib "$server")")
        states+=("$(gate "$base" | tr ' ' /)")
        sleep 1
    done
    loader_rss=$(rss_kib "$loader")
    # Stop the users: the first SIGINT stops sending, the second abandons what is in flight.
    kill -INT "$loader"; sleep 0.5; kill -INT "$loader" 2>/dev/null || true
    for _ in $(seq 1 50); do kill -0 "$loader" 2>/dev/null || break; sleep 0.1; done
    kill "$loader" 2>/dev/null || true
    wait "$loader" 2>/dev/null || true
    kill "$server"; wait "$server" 2>/dev/null || true
    python3 - "$run" "$fresh" "$warm" "$loader_rss" "${states[*]}" "${samples[@]}" <<'EOF' | tee -a "$out/runs.jsonl"
import json, statistics, sys
run, fresh, warm, loader, states = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), sys.argv[5]
samples = [int(s) for s in sys.argv[6:]]
mib = lambda kib: round(kib / 1024, 1)
median = statistics.median(samples)
print(json.dumps({
    "run": int(run), "idle_fresh_mib": mib(fresh), "idle_warm_mib": mib(warm),
    "loaded_median_mib": mib(median), "loaded_max_mib": mib(max(samples)),
    "added_over_fresh_mib": mib(median - fresh), "added_over_warm_mib": mib(median - warm),
    "gate_active_waiting": sorted(set(states.split())), "load_generator_rss_mib": mib(loader),
}))
EOF
done
