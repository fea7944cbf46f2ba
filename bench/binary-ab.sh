#!/usr/bin/env bash
# Two turnstile binaries side by side on the question mix: what a change costs or saves end to
# end. Both serve the shipped corpus (each its own cache directory) with the same plugin and
# settings; wrk (bench/wrk-load.sh) measures them A B A B, and the server CPU per request is read
# from /proc.
#
#   bench/binary-ab.sh OLD_BINARY NEW_BINARY
#
# Environment: MIX (bench/mix.jsonl), CONC (16), SECS (15), RUNS (3), WARM_SECS (3),
#   TS_PLUGIN (unset: the embedded default), OUT (/tmp/binary-ab-<UTC>).
set -euo pipefail

REPO="$(cd "$(dirname "$0")/.." && pwd)"
[ $# -eq 2 ] && [ -x "$1" ] && [ -x "$2" ] || { echo "usage: $0 OLD_BINARY NEW_BINARY" >&2; exit 2; }
CONC="${CONC:-16}"; SECS="${SECS:-15}"; RUNS="${RUNS:-3}"; WARM_SECS="${WARM_SECS:-3}"
export MIX="${MIX:-$REPO/bench/mix.jsonl}"
OUT="${OUT:-/tmp/binary-ab-$(date -u +%Y%m%dT%H%M%SZ)}"
mkdir -p "$OUT"
RESULTS="$OUT/results.jsonl"; : >"$RESULTS"
WORK="$(mktemp -d /tmp/binary-ab.XXXXXX)"
source "$REPO/bench/pids.sh"
cleanup() { stop_all; rm -rf "$WORK"; }
trap cleanup EXIT

start() {  # NAME BINARY PORT -> prints PID once GET /readyz answers
  local name="$1" bin="$2" port="$3" pid
  mkdir -p "$WORK/cache-$name"
  "$bin" serve --listen "127.0.0.1:$port" --cache-dir "$WORK/cache-$name" \
    --max-active 2 --max-waiting 32 --wait-ms 5000 ${TS_PLUGIN:+--plugin "$TS_PLUGIN"} \
    >"$OUT/$name.log" 2>&1 </dev/null &
  pid=$!
  wait_ready "$name" "$pid" "http://127.0.0.1:$port/readyz" "$OUT/$name.log" 600 || exit 1
  echo "$pid"
}

measure() {  # NAME PID URL RUN
  local name="$1" pid="$2" url="$3" run="$4" t0 t1 line
  t0="$(cpu_ticks "$pid")"
  line="$("$REPO/bench/wrk-load.sh" "$url" - "$CONC" "$SECS")"
  t1="$(cpu_ticks "$pid")"
  printf '{"target": "%s", "run": %s, "server_cpu_s": %s, "result": %s}\n' "$name" "$run" \
    "$(awk -v a="$t0" -v b="$t1" -v hz="$(getconf CLK_TCK)" 'BEGIN{printf "%.2f", (b-a)/hz}')" \
    "$line" | tee -a "$RESULTS"
}

{
  echo "utc_start: $(date -u +%FT%TZ)"
  echo "old: $1 sha256 $(sha256sum "$1" | cut -d' ' -f1)"
  echo "new: $2 sha256 $(sha256sum "$2" | cut -d' ' -f1)"
  echo "plugin: ${TS_PLUGIN:-embedded default}; mix: $MIX; conc=$CONC secs=$SECS runs=$RUNS"
} | tee "$OUT/meta.txt"

OLD_PID="$(start old "$1" 18390)"; PIDS+=("$OLD_PID")
NEW_PID="$(start new "$2" 18391)"; PIDS+=("$NEW_PID")
SECS="$WARM_SECS" "$REPO/bench/wrk-load.sh" http://127.0.0.1:18390/retrieve - "$CONC" "$WARM_SECS" >/dev/null
SECS="$WARM_SECS" "$REPO/bench/wrk-load.sh" http://127.0.0.1:18391/retrieve - "$CONC" "$WARM_SECS" >/dev/null
for run in $(seq 1 "$RUNS"); do
  measure old "$OLD_PID" http://127.0.0.1:18390/retrieve "$run"
  measure new "$NEW_PID" http://127.0.0.1:18391/retrieve "$run"
done
echo "utc_end: $(date -u +%FT%TZ)" | tee -a "$OUT/meta.txt"

python3 - "$RESULTS" <<'EOF' | tee "$OUT/summary.md"
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
print("| binary | median req/s | median p50 ms | median p99 ms | CPU ms per request |")
print("| --- | --- | --- | --- | --- |")
med = {}
for name in ("old", "new"):
    rs = [r for r in rows if r["target"] == name]
    rps = statistics.median(r["result"]["rps"] for r in rs)
    cpu = sum(r["server_cpu_s"] for r in rs) / sum(r["result"]["requests"] for r in rs) * 1000
    med[name] = rps
    print(f"| {name} | {rps:.1f} | {statistics.median(r['result']['p50_ms'] for r in rs):.2f} | "
          f"{statistics.median(r['result']['p99_ms'] for r in rs):.2f} | {cpu:.3f} |")
print(f"\nnew / old (median req/s): {med['new'] / med['old']:.3f}x")
EOF
echo "results: $OUT"
