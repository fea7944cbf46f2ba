#!/usr/bin/env bash
# What a larger corpus costs: turnstile on the shipped corpus and on it replicated N times
# (bench/replicate-corpus.py, ids suffixed `_vK`), same binary, same plugin, same question mix,
# measured A B A B in one run with wrk (bench/wrk-load.sh).
#
#   bench/corpus-scale.sh
#
# Prerequisites: a release binary (cargo build --release -p turnstile-cli && cp
# target/release/turnstile /tmp/turnstile-bench-bin) and `wrk` (Debian package).
#
# For each corpus it reports the first start (index build from an empty cache directory, plugin
# compile, until GET /readyz answers), requests/s, p50, p99, server CPU per request and resident
# memory after the runs, and the ratio of the two.
#
# Environment: TURNSTILE_BIN (/tmp/turnstile-bench-bin), COPIES (16), MIX (bench/mix.jsonl),
#   CONC (16), SECS (15), RUNS (2), WARM_SECS (3), TS_PLUGIN (unset: the embedded default; e.g.
#   a build of plugins/retrieval for the lexical plugin), OUT (/tmp/corpus-scale-<UTC>).
set -euo pipefail

REPO="$(cd "$(dirname "$0")/.." && pwd)"
BIN="${TURNSTILE_BIN:-/tmp/turnstile-bench-bin}"
COPIES="${COPIES:-16}"; CONC="${CONC:-16}"; SECS="${SECS:-15}"; RUNS="${RUNS:-2}"
WARM_SECS="${WARM_SECS:-3}"
export MIX="${MIX:-$REPO/bench/mix.jsonl}"
OUT="${OUT:-/tmp/corpus-scale-$(date -u +%Y%m%dT%H%M%SZ)}"
[ -x "$BIN" ] || { echo "missing $BIN: cargo build --release -p turnstile-cli && cp target/release/turnstile $BIN" >&2; exit 1; }
mkdir -p "$OUT"
RESULTS="$OUT/results.jsonl"; : >"$RESULTS"
WORK="$(mktemp -d /tmp/corpus-scale.XXXXXX)"
source "$REPO/bench/pids.sh"
cleanup() { stop_all; rm -rf "$WORK"; }
trap cleanup EXIT

SHIPPED="$REPO/corpus/python-summaries.jsonl"
LARGE="$WORK/corpus-${COPIES}x.jsonl"
python3 "$REPO/bench/replicate-corpus.py" "$COPIES" "$SHIPPED" >"$LARGE"

start() {  # NAME CORPUS PORT -> prints PID; the first start's seconds go to OUT/NAME.start
  local name="$1" corpus="$2" port="$3" t0 pid
  mkdir -p "$WORK/cache-$name"
  t0="$(date +%s.%N)"
  "$BIN" serve --listen "127.0.0.1:$port" --corpus "$corpus" --cache-dir "$WORK/cache-$name" \
    --max-active 2 --max-waiting 32 --wait-ms 5000 ${TS_PLUGIN:+--plugin "$TS_PLUGIN"} \
    >"$OUT/$name.log" 2>&1 </dev/null &
  pid=$!
  wait_ready "$name" "$pid" "http://127.0.0.1:$port/readyz" "$OUT/$name.log" 6000 || exit 1
  awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN{printf "%.2f\n", b-a}' >"$OUT/$name.start"
  echo "$pid"
}

rss_mib() { awk '/^VmRSS/{printf "%.0f", $2 / 1024}' "/proc/$1/status"; }

measure() {  # NAME PID URL RUN
  local name="$1" pid="$2" url="$3" run="$4" t0 t1 line hz
  hz="$(getconf CLK_TCK)"
  t0="$(cpu_ticks "$pid")"
  line="$("$REPO/bench/wrk-load.sh" "$url" - "$CONC" "$SECS")"
  t1="$(cpu_ticks "$pid")"
  printf '{"target": "%s", "run": %s, "server_cpu_s": %s, "server_rss_mib": %s, "first_start_s": %s, "result": %s}\n' \
    "$name" "$run" "$(awk -v a="$t0" -v b="$t1" -v hz="$hz" 'BEGIN{printf "%.2f", (b-a)/hz}')" \
    "$(rss_mib "$pid")" "$(cat "$OUT/$name.start")" "$line" | tee -a "$RESULTS"
}

{
  echo "utc_start: $(date -u +%FT%TZ)"
  echo "commit: $(git -C "$REPO" rev-parse HEAD 2>/dev/null || echo unknown)"
  echo "binary: $BIN sha256 $(sha256sum "$BIN" | cut -d' ' -f1)"
  echo "plugin: ${TS_PLUGIN:-embedded default}"
  echo "corpora: shipped $(wc -l <"$SHIPPED") documents, ${COPIES}x $(wc -l <"$LARGE") documents"
  echo "mix: $MIX ($(grep -c . "$MIX") bodies); conc=$CONC secs=$SECS runs=$RUNS"
} | tee "$OUT/meta.txt"

SMALL_PID="$(start shipped "$SHIPPED" 18090)"; PIDS+=("$SMALL_PID")
LARGE_PID="$(start "${COPIES}x" "$LARGE" 18091)"; PIDS+=("$LARGE_PID")
for port in 18090 18091; do
  "$REPO/bench/wrk-load.sh" "http://127.0.0.1:$port/retrieve" - "$CONC" "$WARM_SECS" >/dev/null
done
for run in $(seq 1 "$RUNS"); do
  measure shipped "$SMALL_PID" "http://127.0.0.1:18090/retrieve" "$run"
  measure "${COPIES}x" "$LARGE_PID" "http://127.0.0.1:18091/retrieve" "$run"
done
echo "utc_end: $(date -u +%FT%TZ)" | tee -a "$OUT/meta.txt"

python3 - "$RESULTS" <<'PYEOF' | tee "$OUT/summary.md"
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
by = {}
for r in rows:
    by.setdefault(r["target"], []).append(r)
print("| corpus | first start s | median req/s | median p50 ms | median p99 ms | CPU ms per request | RSS MiB after |")
print("| --- | --- | --- | --- | --- | --- | --- |")
med = {}
for t, rs in by.items():
    m = {k: statistics.median(r["result"][k] for r in rs) for k in ("rps", "p50_ms", "p99_ms")}
    cpu = sum(r["server_cpu_s"] for r in rs) / max(1, sum(r["result"]["requests"] for r in rs)) * 1000
    med[t] = m
    print(f"| {t} | {rs[0]['first_start_s']} | {m['rps']} | {m['p50_ms']} | {m['p99_ms']} | {cpu:.3f} | {rs[-1]['server_rss_mib']} |")
names = list(by)
if len(names) == 2:
    a, b = med[names[0]], med[names[1]]
    print()
    print(f"{names[1]} vs {names[0]}: {a['rps'] / b['rps']:.2f}x slower (req/s; goal <= 2x), p99 {b['p99_ms'] / a['p99_ms']:.2f}x")
PYEOF
echo "results: $OUT" >&2
