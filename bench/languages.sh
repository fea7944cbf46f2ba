#!/usr/bin/env bash
# Plugins in every language side by side with the plain Python service they would replace, in one
# run: the Rust lexical and hybrid plugins, the Python and JavaScript ports of the hybrid one, any
# further plugin given (the kit's lexical templates, say), each served by the same `turnstile
# serve` settings over the shipped corpus, and the Python lab (../shared/peers/python_lab: FastAPI,
# one process, FTS5 over the same corpus file, MAX_ACTIVE 2) — all started at once, then loaded
# with the question mix by wrk (bench/wrk-load.sh) in turn, round after round (RUNS rounds), so
# that drift of the machine falls on all of them alike. Per target: median requests/s (and its
# ratio to the lab's and to the Rust lexical plugin's), p50/p99, server CPU per request and minor
# page faults per request (from /proc), resident memory idle after warm-up and at its peak under
# load (VmRSS sampled every 0.2 s while MAX_ACTIVE calls run), and of the first start, which
# compiled the component (the measured server starts from the precompiled cache).
#
#   bench/languages.sh BINARY PLUGIN_DIR [NAME=FILE.wasm ...]
#     PLUGIN_DIR: `cargo xtask plugins`'s target/plugins
#
# Environment: MIX (bench/mix.jsonl), CONC (16), SECS (15), RUNS (3), WARM_SECS (5), MAX_ACTIVE (2),
#   MEMORY_INIT (cow), PEER (1; 0: no Python lab), PEERS (<repo>/../shared/peers), PEERS_STATE
#   (~/.cache/turnstile-peers: the lab's venv, from `PEERS_STATE=... $PEERS/setup.sh`),
#   OUT (/tmp/languages-<UTC>). Everything listens on 127.0.0.1 and is stopped on exit.
set -euo pipefail

REPO="$(cd "$(dirname "$0")/.." && pwd)"
[ $# -ge 2 ] && [ -x "$1" ] && [ -d "$2" ] || { echo "usage: $0 BINARY PLUGIN_DIR [NAME=FILE ...]" >&2; exit 2; }
BIN="$1"; PLUGINS="$2"; shift 2
CONC="${CONC:-16}"; SECS="${SECS:-15}"; RUNS="${RUNS:-3}"; WARM_SECS="${WARM_SECS:-5}"
MAX_ACTIVE="${MAX_ACTIVE:-2}"; MEMORY_INIT="${MEMORY_INIT:-cow}"; PEER="${PEER:-1}"
PEERS="${PEERS:-$REPO/../shared/peers}"
export PEERS_STATE="${PEERS_STATE:-$HOME/.cache/turnstile-peers}" PYTHONDONTWRITEBYTECODE=1
export MIX="${MIX:-$REPO/bench/mix.jsonl}"
CORPUS="$REPO/corpus/python-summaries.jsonl"
OUT="${OUT:-/tmp/languages-$(date -u +%Y%m%dT%H%M%SZ)}"
mkdir -p "$OUT"
RESULTS="$OUT/results.jsonl"; : >"$RESULTS"
WORK="$(mktemp -d /tmp/languages.XXXXXX)"
source "$REPO/bench/pids.sh"
cleanup() { stop_all; rm -rf "$WORK"; }
trap cleanup EXIT

rss_kib() { awk '/^VmRSS/ {print $2}' "/proc/$1/status"; }
minflt() { awk '{print $10}' "/proc/$1/stat"; }

declare -a NAMES=() FILES=()
for plugin in retrieval retrieval-hybrid retrieval-py retrieval-js; do
  NAMES+=("$plugin"); FILES+=("$PLUGINS/$plugin.wasm")
done
for extra in "$@"; do NAMES+=("${extra%%=*}"); FILES+=("${extra#*=}"); done

{
  echo "utc_start: $(date -u +%FT%TZ)"
  echo "binary: $BIN sha256 $(sha256sum "$BIN" | cut -d' ' -f1)"
  echo "mix: $MIX; conc=$CONC secs=$SECS runs=$RUNS max_active=$MAX_ACTIVE memory_init=$MEMORY_INIT"
  echo "machine: $(nproc) cores, $(uname -r)"
} | tee "$OUT/meta.txt"

# Start every target; URL and PID by name.
declare -A URL PID IDLE FIRST
port=18400
for i in "${!NAMES[@]}"; do
  name="${NAMES[$i]}"; file="${FILES[$i]}"
  [ -f "$file" ] || { echo "$file missing (cargo xtask plugins)" >&2; exit 1; }
  echo "$name: $(wc -c <"$file") bytes, sha256 $(sha256sum "$file" | cut -d' ' -f1)" | tee -a "$OUT/meta.txt"
  port=$((port + 1))
  # A cache of its own. The first start compiles the component into it (a language runtime's:
  # seconds, and the compiler's memory) and is stopped once ready, its resident memory kept
  # (FIRST); the measured server starts from the cache, as every later start of a service does.
  "$BIN" serve --listen "127.0.0.1:$port" --cache-dir "$WORK/cache-$name" --plugin "$file" \
    --max-active "$MAX_ACTIVE" --plugin-memory-init "$MEMORY_INIT" >"$OUT/$name-first.log" 2>&1 </dev/null &
  first=$!; PIDS+=("$first")
  wait_ready "$name" "$first" "http://127.0.0.1:$port/readyz" "$OUT/$name-first.log" 3000
  FIRST[$name]="$(rss_kib "$first")"; stop_pid "$first"
  "$BIN" serve --listen "127.0.0.1:$port" --cache-dir "$WORK/cache-$name" --plugin "$file" \
    --max-active "$MAX_ACTIVE" --max-waiting 64 --wait-ms 30000 --plugin-memory-init "$MEMORY_INIT" \
    >"$OUT/$name.log" 2>&1 </dev/null &
  PID[$name]=$!; PIDS+=("$!"); URL[$name]="http://127.0.0.1:$port/retrieve"
  wait_ready "$name" "${PID[$name]}" "http://127.0.0.1:$port/readyz" "$OUT/$name.log" 3000
done
if [ "$PEER" = 1 ]; then
  [ -x "$PEERS_STATE/.venv/bin/python" ] || { echo "no lab venv: PEERS_STATE=$PEERS_STATE $PEERS/setup.sh" >&2; exit 1; }
  port=$((port + 1))
  PID[lab]="$(MAX_ACTIVE="$MAX_ACTIVE" MAX_WAITING=32 WAIT_SECONDS=30 CORPUS_PATH="$CORPUS" "$PEERS/run_python_lab.sh" "$port")"
  PIDS+=("${PID[lab]}"); URL[lab]="http://127.0.0.1:$port/retrieve"; NAMES+=(lab)
fi

for name in "${NAMES[@]}"; do
  "$REPO/bench/wrk-load.sh" "${URL[$name]}" - "$CONC" "$WARM_SECS" >/dev/null
  IDLE[$name]="$(rss_kib "${PID[$name]}")"
done

for run in $(seq 1 "$RUNS"); do
  for name in "${NAMES[@]}"; do
    pid="${PID[$name]}"
    t0="$(cpu_ticks "$pid")"; f0="$(minflt "$pid")"
    ( while kill -0 "$pid" 2>/dev/null; do rss_kib "$pid"; sleep 0.2; done ) >"$WORK/rss" &
    sampler=$!
    line="$("$REPO/bench/wrk-load.sh" "${URL[$name]}" - "$CONC" "$SECS")"
    kill "$sampler" 2>/dev/null || true; wait "$sampler" 2>/dev/null || true
    t1="$(cpu_ticks "$pid")"; f1="$(minflt "$pid")"
    printf '{"target": "%s", "run": %s, "server_cpu_s": %s, "minflt": %s, "first_start_rss_kib": %s, "idle_rss_kib": %s, "load_rss_kib": %s, "result": %s}\n' \
      "$name" "$run" \
      "$(awk -v a="$t0" -v b="$t1" -v hz="$(getconf CLK_TCK)" 'BEGIN{printf "%.2f", (b-a)/hz}')" \
      "$((f1 - f0))" "${FIRST[$name]:-0}" "${IDLE[$name]}" "$(sort -n "$WORK/rss" | tail -1)" "$line" | tee -a "$RESULTS"
  done
done
echo "utc_end: $(date -u +%FT%TZ)" | tee -a "$OUT/meta.txt"

python3 - "$RESULTS" <<'EOF' | tee "$OUT/summary.md"
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
names = list(dict.fromkeys(r["target"] for r in rows))
med = {n: statistics.median(r["result"]["rps"] for r in rows if r["target"] == n) for n in names}
lab, lexical = med.get("lab"), med.get("retrieval")
print("| target | median req/s | vs the Python lab | vs Rust lexical | p50 ms | p99 ms | CPU ms / request | minor faults / request | RSS idle MiB | RSS under load MiB (peak) | RSS after compiling MiB |")
print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
for n in names:
    rs = [r for r in rows if r["target"] == n]
    requests = sum(r["result"]["requests"] for r in rs)
    bad = sum(v for r in rs for k, v in r["result"].get("status", {}).items() if k != "200")
    ratio = lambda base: f"{med[n] / base:.2f}x" if base else "—"
    print(f"| {n} | {med[n]:.1f} | {ratio(lab)} | {ratio(lexical)} | "
          f"{statistics.median(r['result']['p50_ms'] for r in rs):.2f} | "
          f"{statistics.median(r['result']['p99_ms'] for r in rs):.2f} | "
          f"{sum(r['server_cpu_s'] for r in rs) / requests * 1000:.2f} | "
          f"{sum(r['minflt'] for r in rs) / requests:.1f} | "
          f"{max(r['idle_rss_kib'] for r in rs) / 1024:.0f} | {max(r['load_rss_kib'] for r in rs) / 1024:.0f} | "
          f"{max(r['first_start_rss_kib'] for r in rs) / 1024:.0f} |"
          + (f" ({bad} non-200)" if bad else ""))
EOF
echo "results: $OUT"
