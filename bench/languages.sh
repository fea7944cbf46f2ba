#!/usr/bin/env bash
# Plugins in four languages side by side, one binary: the Rust lexical and hybrid plugins, and the
# Python and JavaScript ports of the hybrid one, each served by the same `turnstile serve`
# settings over the shipped corpus, loaded with the question mix by wrk (bench/wrk-load.sh), in
# turn, RUNS times. Per plugin: median requests/s, p50/p99, server CPU per request (from /proc),
# and the server's resident memory at its peak while MAX_ACTIVE calls ran (VmHWM, and VmRSS
# sampled during the load).
#
#   bench/languages.sh BINARY PLUGIN_DIR     (PLUGIN_DIR: `cargo xtask plugins`'s target/plugins)
#
# Environment: MIX (bench/mix.jsonl), CONC (16), SECS (15), RUNS (3), WARM_SECS (5), MAX_ACTIVE (2),
#   MEMORY_INIT (cow: `serve --plugin-memory-init`), OUT (/tmp/languages-<UTC>).
set -euo pipefail

REPO="$(cd "$(dirname "$0")/.." && pwd)"
[ $# -eq 2 ] && [ -x "$1" ] && [ -d "$2" ] || { echo "usage: $0 BINARY PLUGIN_DIR" >&2; exit 2; }
BIN="$1"; PLUGINS="$2"
CONC="${CONC:-16}"; SECS="${SECS:-15}"; RUNS="${RUNS:-3}"; WARM_SECS="${WARM_SECS:-5}"
MAX_ACTIVE="${MAX_ACTIVE:-2}"; MEMORY_INIT="${MEMORY_INIT:-cow}"
export MIX="${MIX:-$REPO/bench/mix.jsonl}"
OUT="${OUT:-/tmp/languages-$(date -u +%Y%m%dT%H%M%SZ)}"
mkdir -p "$OUT"
RESULTS="$OUT/results.jsonl"; : >"$RESULTS"
WORK="$(mktemp -d /tmp/languages.XXXXXX)"
source "$REPO/bench/pids.sh"
cleanup() { stop_all; rm -rf "$WORK"; }
trap cleanup EXIT

rss_kib() { awk '/^VmRSS/ {print $2}' "/proc/$1/status"; }
hwm_kib() { awk '/^VmHWM/ {print $2}' "/proc/$1/status"; }

{
  echo "utc_start: $(date -u +%FT%TZ)"
  echo "binary: $BIN sha256 $(sha256sum "$BIN" | cut -d' ' -f1)"
  echo "mix: $MIX; conc=$CONC secs=$SECS runs=$RUNS max_active=$MAX_ACTIVE memory_init=$MEMORY_INIT"
  echo "machine: $(nproc) cores, $(uname -r)"
} | tee "$OUT/meta.txt"

port=18400
for plugin in retrieval retrieval-hybrid retrieval-py retrieval-js; do
  file="$PLUGINS/$plugin.wasm"
  [ -f "$file" ] || { echo "$file missing: cargo xtask plugins" >&2; exit 1; }
  echo "$plugin: $(wc -c <"$file") bytes, sha256 $(sha256sum "$file" | cut -d' ' -f1)" | tee -a "$OUT/meta.txt"
  port=$((port + 1))
  "$BIN" serve --listen "127.0.0.1:$port" --cache-dir "$WORK/cache" --plugin "$file" \
    --max-active "$MAX_ACTIVE" --max-waiting 64 --wait-ms 30000 --plugin-memory-init "$MEMORY_INIT" \
    >"$OUT/$plugin.log" 2>&1 </dev/null &
  pid=$!; PIDS+=("$pid")
  wait_ready "$plugin" "$pid" "http://127.0.0.1:$port/readyz" "$OUT/$plugin.log" 3000
  idle_rss="$(rss_kib "$pid")"
  "$REPO/bench/wrk-load.sh" "http://127.0.0.1:$port/retrieve" - "$CONC" "$WARM_SECS" >/dev/null
  for run in $(seq 1 "$RUNS"); do
    t0="$(cpu_ticks "$pid")"
    peak=0
    ( while kill -0 "$pid" 2>/dev/null; do rss_kib "$pid"; sleep 0.2; done ) >"$WORK/rss" &
    sampler=$!
    line="$("$REPO/bench/wrk-load.sh" "http://127.0.0.1:$port/retrieve" - "$CONC" "$SECS")"
    kill "$sampler" 2>/dev/null || true; wait "$sampler" 2>/dev/null || true
    peak="$(sort -n "$WORK/rss" | tail -1)"
    t1="$(cpu_ticks "$pid")"
    printf '{"plugin": "%s", "run": %s, "server_cpu_s": %s, "idle_rss_kib": %s, "load_rss_kib": %s, "hwm_kib": %s, "result": %s}\n' \
      "$plugin" "$run" \
      "$(awk -v a="$t0" -v b="$t1" -v hz="$(getconf CLK_TCK)" 'BEGIN{printf "%.2f", (b-a)/hz}')" \
      "$idle_rss" "${peak:-0}" "$(hwm_kib "$pid")" "$line" | tee -a "$RESULTS"
  done
  stop_pid "$pid"
done
echo "utc_end: $(date -u +%FT%TZ)" | tee -a "$OUT/meta.txt"

python3 - "$RESULTS" <<'EOF' | tee "$OUT/summary.md"
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
print("| plugin | median req/s | vs Rust lexical | median p50 ms | median p99 ms | CPU ms per request | RSS idle MiB | RSS under load MiB (peak) |")
print("| --- | --- | --- | --- | --- | --- | --- | --- |")
base = None
for name in ("retrieval", "retrieval-hybrid", "retrieval-py", "retrieval-js"):
    rs = [r for r in rows if r["plugin"] == name]
    rps = statistics.median(r["result"]["rps"] for r in rs)
    base = base or rps
    cpu = sum(r["server_cpu_s"] for r in rs) / sum(r["result"]["requests"] for r in rs) * 1000
    bad = sum(v for r in rs for k, v in r["result"].get("status", {}).items() if k != "200")
    print(f"| {name} | {rps:.1f} | {rps / base:.3f} | {statistics.median(r['result']['p50_ms'] for r in rs):.2f} | "
          f"{statistics.median(r['result']['p99_ms'] for r in rs):.2f} | {cpu:.3f} | "
          f"{max(r['idle_rss_kib'] for r in rs) / 1024:.0f} | {max(r['load_rss_kib'] for r in rs) / 1024:.0f} |"
          + (f" ({bad} non-200)" if bad else ""))
EOF
echo "results: $OUT"
