#!/usr/bin/env bash
# The classic demo, streamed, through the standard API: 60 users asking turnstile's
# `POST /v1/chat/completions` with `"stream": true`, the `rag` plugin in front of a model
# upstream (tests/upstream/upstream.py) that streams each answer for 2 s (first token after
# 200 ms, the rest over 1.8 s), behind `--max-active 20`. First with `turnstile load --chat
# --stream`, then with Locust (bench/locust/chat_stream.py), against the same server.
#
#   bench/rag-stream-demo.sh [SECONDS=90] [OUT=target/bench/rag-stream-demo]
#
# Reports for each run: the plateau (20 streams / ~2 s predicts 10 req/s), TTFT and total
# percentiles, the upstream's own most streams at once (never above 20), and — joining the
# upstream's per-request timings (`/stats/requests`) with the client's by each question's
# `req:TAG` — the delay from the upstream writing its first token to the client reading the
# first content delta (bench/stream_report.py).
#
# Needs: a release build (cargo build --release -p turnstile-cli), target/plugins/rag.wasm
# (cargo xtask plugins), python3, and Locust (python3 -m venv target/bench-venv &&
# target/bench-venv/bin/pip install -r bench/requirements.txt; LOCUST=path to use another; with
# LOCUST=none the Locust run is skipped). RUNS=N repeats the `turnstile load` run N times.
# NODELAY=1 runs the upstream with TCP_NODELAY (bench/upstream_nodelay.py), as model servers
# are run: without it, Nagle's algorithm holds each first token ~40 ms (docs/STREAMING.md).
set -euo pipefail
cd "$(dirname "$0")/.."
seconds="${1:-90}"
out="${2:-target/bench/rag-stream-demo}"
bin="${TURNSTILE_BIN:-target/release/turnstile}"
rag="${RAG_WASM:-target/plugins/rag.wasm}"
locust="${LOCUST:-target/bench-venv/bin/locust}"
runs="${RUNS:-1}"
latency_ms=200
stream_ms=1800
answer_words=60
mkdir -p "$out"
[ -x "$bin" ] || { echo "build it first: cargo build --release -p turnstile-cli" >&2; exit 1; }
[ -f "$rag" ] || { echo "build it first: cargo xtask plugins" >&2; exit 1; }
if [ "$locust" != none ] && [ ! -x "$locust" ]; then
    echo "no Locust at $locust: python3 -m venv target/bench-venv && target/bench-venv/bin/pip install -r bench/requirements.txt (or LOCUST=none)" >&2
    exit 1
fi

pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; }
trap cleanup EXIT

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
wait_for() { for _ in $(seq 1 600); do curl -sf "$1" >/dev/null 2>&1 && return 0; sleep 0.1; done; echo "never up: $1" >&2; return 1; }

# The upstream: first token after 200 ms, 60 tokens spread over 1.8 s.
fifo="$out/upstream.fifo"
rm -f "$fifo"; mkfifo "$fifo"
upstream_py=tests/upstream/upstream.py
[ "${NODELAY:-0}" = 1 ] && upstream_py=bench/upstream_nodelay.py
python3 "$upstream_py" --port 0 --latency-ms "$latency_ms" --stream-ms "$stream_ms" \
    --answer-words "$answer_words" >"$fifo" 2>"$out/upstream.log" &
pids+=($!)
read -r line <"$fifo"
upstream="${line#listening on }"
echo "upstream: $upstream ($upstream_py: first token after $latency_ms ms, $answer_words tokens over $stream_ms ms)"

port=$(free_port)
"$bin" serve --listen "127.0.0.1:$port" --plugin "$rag" --max-active 20 --max-waiting 200 \
    --wait-ms 60000 --outbound-allow "$upstream" \
    --plugin-config "upstream=$upstream" --plugin-config model=demo \
    --access-log false 2>>"$out/serve.log" &
pids+=($!)
wait_for "http://127.0.0.1:$port/readyz"
base="http://127.0.0.1:$port"

stats() { curl -sf "$upstream/stats"; }
reset() { curl -sf -X POST "$upstream/stats/reset" >/dev/null; }

# One turnstile load run into DIR; prints its line.
turnstile_run() { # DIR
    local dir=$1
    reset
    "$bin" load --chat --stream --url "$base/v1/chat/completions" --users 60 --spawn-rate 5 \
        --duration "$seconds" --timeout-s 120 --output "$dir" --quiet >"$dir.txt"
    stats >"$dir/upstream-stats.json"
    curl -sf "$upstream/stats/requests" >"$dir/upstream-requests.json"
    python3 bench/stream_report.py join "$dir/requests.jsonl" "$dir/upstream-requests.json" \
        >"$dir/join.json"
    python3 - "$dir" <<'EOF'
import json, sys
d = sys.argv[1]
s = json.load(open(f"{d}/summary.json"))
u = json.load(open(f"{d}/upstream-stats.json"))
j = json.load(open(f"{d}/join.json"))
t, l, p = s["ttft_ms"] or {}, s["latency_ms"] or {}, s["plateau"]
print(f"turnstile load ({d}): {s['requests']} requests {json.dumps(s['statuses'])}, plateau "
      f"{p['requests_per_s']} req/s ({p['start_s']}-{p['end_s']} s; 20 / 2 s predicts 10); "
      f"TTFT p50/p95/p99 {t.get('p50')}/{t.get('p95')}/{t.get('p99')} ms; total p50/p99 "
      f"{l.get('p50')}/{l.get('p99')} ms; upstream: {u['requests']} requests, at most "
      f"{u['max_in_flight']} at once")
f = j["first_token_to_client_ms"]
print(f"   upstream's first token -> client's first delta ({j['joined']} joined): p50 {f['p50']} "
      f"p95 {f['p95']} p99 {f['p99']} max {f['max']} ms; within 50 ms: "
      f"{100 * (j['within_50_ms_share'] or 0):.1f} %")
EOF
}

for run in $(seq 1 "$runs"); do
    turnstile_run "$out/turnstile-$run"
done

if [ "$locust" != none ]; then
    reset
    mkdir -p "$out/locust"
    rm -f "$out/locust/requests.jsonl"
    "$locust" -f bench/locust/chat_stream.py --headless -u 60 -r 5 -t "${seconds}s" \
        --host "$base" --csv "$out/locust/run" --csv-full-history \
        --chat-timings "$out/locust/requests.jsonl" >"$out/locust/locust.log" 2>&1
    stats >"$out/locust/upstream-stats.json"
    curl -sf "$upstream/stats/requests" >"$out/locust/upstream-requests.json"
    python3 bench/stream_report.py locust "$out/locust/run" >"$out/locust/summary.json"
    python3 bench/stream_report.py join "$out/locust/requests.jsonl" \
        "$out/locust/upstream-requests.json" >"$out/locust/join.json"
    python3 - "$out/locust" <<'EOF'
import json, sys
d = sys.argv[1]
s = json.load(open(f"{d}/summary.json"))
u = json.load(open(f"{d}/upstream-stats.json"))
j = json.load(open(f"{d}/join.json"))
t, l, p = s.get("ttft_ms", {}), s.get("total_ms", {}), s.get("plateau", {})
print(f"Locust ({d}): {l.get('requests')} requests, {l.get('failures')} failures, plateau "
      f"{p.get('requests_per_s')} req/s ({p.get('start_s')}-{p.get('end_s')} s); TTFT p50/p95/p99 "
      f"{t.get('p50')}/{t.get('p95')}/{t.get('p99')} ms; total p50/p99 {l.get('p50')}/{l.get('p99')} ms; "
      f"upstream: {u['requests']} requests, at most {u['max_in_flight']} at once")
f = j["first_token_to_client_ms"]
print(f"   upstream's first token -> client's first delta ({j['joined']} joined): p50 {f['p50']} "
      f"p95 {f['p95']} p99 {f['p99']} max {f['max']} ms; within 50 ms: "
      f"{100 * (j['within_50_ms_share'] or 0):.1f} %")
EOF
fi
