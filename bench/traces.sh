#!/usr/bin/env bash
# What traces cost: lexical /retrieve requests per second with tracing off and on, side by side.
# One release binary, the shipped lexical plugin and corpus, the question mix (bench/mix.jsonl)
# driven by wrk (bench/wrk-load.sh) at CONCURRENCY connections for SECONDS a round; ROUNDS rounds
# alternating off, on, off, on, … (a fresh server each), the "on" server exporting every span to
# a local OTLP receiver (tests/otlp/receiver.py, in the tests' venv) with the default batching.
# Prints each round's JSON line (with the server's CPU per request, from /proc/PID/stat), then the
# medians and on/off. With COLLECTOR=unreachable the "on"
# server exports to a closed port instead: every span is still made, queued, batched and its
# export tried, but no receiver shares the machine's cores — turnstile's own share of the cost.
#
#   bench/traces.sh [BINARY] [ROUNDS=3] [CONCURRENCY=16] [SECONDS=20]
#
# BINARY defaults to target/release/turnstile (`cargo build --release -p turnstile-cli`).
set -euo pipefail
REPO="$(cd "$(dirname "$0")/.." && pwd)"
BIN="${1:-$REPO/target/release/turnstile}"; ROUNDS="${2:-3}"; CONC="${3:-16}"; SECS="${4:-20}"
PY="$REPO/target/test-venv/bin/python"
[ -x "$BIN" ] || { echo "no binary at $BIN: cargo build --release -p turnstile-cli" >&2; exit 1; }
[ -x "$PY" ] || { echo "no test venv: run tests/setup.sh" >&2; exit 1; }
WORK="$(mktemp -d)"; PIDS=()
cleanup() { for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done; rm -rf "$WORK"; }
trap cleanup EXIT

"$PY" "$REPO/tests/otlp/receiver.py" --port 0 >"$WORK/receiver.out" 2>/dev/null &
PIDS+=($!)
for _ in $(seq 100); do [ -s "$WORK/receiver.out" ] && break; sleep 0.1; done
RECEIVER="$(sed 's/listening on //' "$WORK/receiver.out")"
EXPORT_TO="$RECEIVER"
[ "${COLLECTOR:-receiver}" = unreachable ] && EXPORT_TO="http://127.0.0.1:9"

port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

round() {  # round off|on
  local p; p="$(port)"
  local traces=()
  [ "$1" = on ] && traces=(--otlp-endpoint "$EXPORT_TO")
  "$BIN" serve --listen "127.0.0.1:$p" --cache-dir "$WORK/cache" --access-log false \
    --max-active 4 --max-waiting 1000 "${traces[@]}" 2>"$WORK/serve-$1.log" &
  local pid=$!
  for _ in $(seq 600); do curl -fs "127.0.0.1:$p/readyz" >/dev/null 2>&1 && break; sleep 0.1; done
  # A warm-up, then the measured run.
  "$REPO/bench/wrk-load.sh" "http://127.0.0.1:$p/retrieve" - "$CONC" 3 >/dev/null
  # The server's CPU over the measured run (user + system clock ticks), per request.
  local before after line
  before="$(awk '{print $14 + $15}' "/proc/$pid/stat")"
  line="$("$REPO/bench/wrk-load.sh" "http://127.0.0.1:$p/retrieve" - "$CONC" "$SECS")"
  after="$(awk '{print $14 + $15}' "/proc/$pid/stat")"
  kill "$pid"; wait "$pid" 2>/dev/null || true
  local cpu; cpu="$(python3 -c "import json,os,sys; r=json.loads(sys.argv[1]); print(round(($after-$before)/os.sysconf('SC_CLK_TCK')*1e6/max(r['requests'],1),1))" "$line")"
  echo "{\"tracing\": \"$1\", \"cpu_us_per_request\": $cpu, \"run\": $line}"
}

for i in $(seq "$ROUNDS"); do
  round off | tee -a "$WORK/rounds.jsonl"
  round on | tee -a "$WORK/rounds.jsonl"
done
curl -s "$RECEIVER/stats" | sed 's/^/receiver: /'; echo
python3 - "$WORK/rounds.jsonl" <<'PYEOF'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
med = {m: statistics.median(r["run"]["rps"] for r in rows if r["tracing"] == m) for m in ("off", "on")}
p99 = {m: statistics.median(r["run"]["p99_ms"] for r in rows if r["tracing"] == m) for m in ("off", "on")}
cpu = {m: statistics.median(r["cpu_us_per_request"] for r in rows if r["tracing"] == m) for m in ("off", "on")}
print(json.dumps({"rps_median": med, "p99_ms_median": p99, "cpu_us_per_request_median": cpu,
                  "cpu_cost_percent": round(100 * (cpu["on"] / cpu["off"] - 1), 1),
                  "on_over_off": round(med["on"] / med["off"], 3),
                  "cost_percent": round(100 * (1 - med["on"] / med["off"]), 1)}))
PYEOF
