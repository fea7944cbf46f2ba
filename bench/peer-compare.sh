#!/usr/bin/env bash
# Side-by-side POST /retrieve benchmark: turnstile vs the Python lab (../shared/peers/python_lab),
# same machine, same load generator (the peers' load.sh, i.e. oha 1.16.0), same corpus file.
#
#   bench/peer-compare.sh
#
# Prerequisites (not done by this script):
#   PEERS_STATE=~/.cache/turnstile-peers ../shared/peers/setup.sh --oha    # venv + oha
#   cargo build --release -p turnstile-cli && cp target/release/turnstile /tmp/turnstile-bench-bin
#
# What it does (everything on 127.0.0.1, every process it starts is stopped on exit):
#   1. starts turnstile (--max-active 2 --max-waiting 32 --wait-ms 5000, --corpus corpus/python-summaries.jsonl,
#      a throw-away --cache-dir) and waits for GET /readyz;
#   2. starts the lab with MAX_ACTIVE=2 MAX_WAITING=32 WAIT_SECONDS=5 CORPUS_PATH=<the same file>;
#   3. warms both up (WARM_SECS of load each, discarded);
#   4. measures A B A B A B (RUNS of each: turnstile, lab), CONC connections, SECS seconds per run;
#   5. stops both, then measures turnstile alone with --max-active 4 (informative, RUNS runs);
#   6. prints a Markdown summary (runs, medians, ratios) and keeps everything in OUT.
#
# Environment: TURNSTILE_BIN (/tmp/turnstile-bench-bin), PEERS (<repo>/../shared/peers),
#   PEERS_STATE (~/.cache/turnstile-peers), CONC (16), SECS (20), RUNS (3), WARM_SECS (3),
#   TS_PORT (18080), LAB_PORT (18000), TS4_PORT (18081), OUT (/tmp/peer-compare-<UTC>),
#   CORPUS (<repo>/corpus/python-summaries.jsonl; used by BOTH servers), WITH_MAX_ACTIVE_4 (1; 0 skips step 5),
#   TS_PLUGIN (unset: turnstile's embedded default plugin; a .wasm path, e.g. target/plugins/retrieval.wasm),
#   BODY ({"question": "How do I parse command line arguments?", "limit": 5}),
#   MIX (unset: one BODY per run with oha; a file of JSON bodies, one per line, e.g. bench/mix.jsonl
#   from bench/mix-bodies.py: the mix in turn, with wrk and loadtest/mix.lua, for both services).
set -euo pipefail

REPO="$(cd "$(dirname "$0")/.." && pwd)"
PEERS="${PEERS:-$REPO/../shared/peers}"
PEERS="$(cd "$PEERS" && pwd)"
# The peers folder is meant to stay read-only: keep its venv/oha/logs in a per-user cache even
# when running as root (for root, `[ -w ]` is true, so _state.sh would otherwise write into it),
# and keep Python from writing __pycache__ next to the lab's sources.
export PEERS_STATE="${PEERS_STATE:-$HOME/.cache/turnstile-peers}"
export PYTHONDONTWRITEBYTECODE=1

BIN="${TURNSTILE_BIN:-/tmp/turnstile-bench-bin}"
CORPUS="${CORPUS:-$REPO/corpus/python-summaries.jsonl}"
WITH_MAX_ACTIVE_4="${WITH_MAX_ACTIVE_4:-1}"
CONC="${CONC:-16}"; SECS="${SECS:-20}"; RUNS="${RUNS:-3}"; WARM_SECS="${WARM_SECS:-3}"
TS_PORT="${TS_PORT:-18080}"; LAB_PORT="${LAB_PORT:-18000}"; TS4_PORT="${TS4_PORT:-18081}"
DEFAULT_BODY='{"question": "How do I parse command line arguments?", "limit": 5}'
BODY="${BODY:-$DEFAULT_BODY}"
OUT="${OUT:-/tmp/peer-compare-$(date -u +%Y%m%dT%H%M%SZ)}"
LOAD="$PEERS/load.sh"
# MIX=FILE.jsonl: the question mix instead of one body, with wrk for both services
# (bench/wrk-load.sh, loadtest/mix.lua); the oha-based load.sh takes one body only.
if [ -n "${MIX:-}" ]; then
  export MIX; LOAD="$REPO/bench/wrk-load.sh"; BODY="$(head -1 "$MIX")"
fi

[ -x "$BIN" ] || { echo "missing $BIN: cargo build --release -p turnstile-cli && cp target/release/turnstile $BIN" >&2; exit 1; }
[ -x "$PEERS_STATE/.venv/bin/python" ] && { [ -n "${MIX:-}" ] || [ -x "$PEERS_STATE/.tools/bin/oha" ]; } \
  || { echo "missing venv/oha in $PEERS_STATE: PEERS_STATE=$PEERS_STATE $PEERS/setup.sh --oha" >&2; exit 1; }
[ -f "$CORPUS" ] || { echo "missing $CORPUS" >&2; exit 1; }
mkdir -p "$OUT"
RESULTS="$OUT/results.jsonl"; : >"$RESULTS"
CACHE="$(mktemp -d /tmp/peer-compare-cache.XXXXXX)"

source "$REPO/bench/pids.sh"
cleanup() { stop_all; rm -rf "$CACHE"; }
trap cleanup EXIT
stop() {  # stop one PID we started and forget it
  local p="$1" keep=() q; stop_pid "$p"
  for q in "${PIDS[@]}"; do [ "$q" = "$p" ] || keep+=("$q"); done; PIDS=("${keep[@]}")
}

start_turnstile() {  # PORT MAX_ACTIVE -> sets TS_PID
  local port="$1" active="$2"
  "$BIN" serve --listen "127.0.0.1:$port" --corpus "$CORPUS" --cache-dir "$CACHE" \
    --max-active "$active" --max-waiting 32 --wait-ms 5000 ${TS_PLUGIN:+--plugin "$TS_PLUGIN"} \
    >"$OUT/turnstile-$port.log" 2>&1 </dev/null &
  TS_PID=$!; PIDS+=("$TS_PID")
  for _ in $(seq 1 1200); do
    kill -0 "$TS_PID" 2>/dev/null || { echo "turnstile exited; log:" >&2; cat "$OUT/turnstile-$port.log" >&2; exit 1; }
    curl -fsS -o /dev/null --max-time 1 "http://127.0.0.1:$port/readyz" 2>/dev/null && return 0
    sleep 0.1
  done
  echo "turnstile not ready after 120 s" >&2; exit 1
}

start_lab() {  # PORT -> sets LAB_PID
  LAB_PID="$(MAX_ACTIVE=2 MAX_WAITING=32 WAIT_SECONDS=5 CORPUS_PATH="$CORPUS" "$PEERS/run_python_lab.sh" "$1")"
  PIDS+=("$LAB_PID")
}

cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }  # utime + stime, clock ticks

check() {  # NAME URL: one request must answer 200 "completed"
  local code; code="$(curl -s -o "$OUT/sample-$1.json" -w '%{http_code}' --max-time 10 \
    -H 'content-type: application/json' -d "$BODY" "$2")"
  [ "$code" = 200 ] || { echo "$1: sanity request answered $code" >&2; cat "$OUT/sample-$1.json" >&2; exit 1; }
}

machine_busy() { awk '/^cpu /{print $2 + $3 + $4 + $7 + $8}' /proc/stat; }  # all CPUs, busy ticks (steal excluded)
steal() { awk '/^cpu /{print $9}' /proc/stat; }  # ticks the hypervisor gave to someone else
rss_mib() { awk '/^VmRSS/{printf "%.0f", $2 / 1024}' "/proc/$1/status"; }
compilers() { pgrep -c -x rustc 2>/dev/null || true; }  # other work on the machine (e.g. a cargo build)

measure() {  # NAME PID URL RUN
  local name="$1" pid="$2" url="$3" run="$4" load0 t0 t1 m0 m1 s0 s1 c0 c1 line hz
  hz="$(getconf CLK_TCK)"
  load0="$(cut -d' ' -f1-3 /proc/loadavg)"; c0="$(compilers)"
  t0="$(cpu_ticks "$pid")"; m0="$(machine_busy)"; s0="$(steal)"
  line="$("$LOAD" "$url" "$BODY" "$CONC" "$SECS")"
  t1="$(cpu_ticks "$pid")"; m1="$(machine_busy)"; s1="$(steal)"; c1="$(compilers)"
  printf '{"target": "%s", "run": %s, "utc": "%s", "loadavg_before": "%s", "rustc_before_after": "%s/%s", "server_cpu_s": %s, "machine_busy_cpu_s": %s, "steal_cpu_s": %s, "server_rss_mib": %s, "result": %s}\n' \
    "$name" "$run" "$(date -u +%FT%TZ)" "$load0" "$c0" "$c1" \
    "$(awk -v a="$t0" -v b="$t1" -v hz="$hz" 'BEGIN{printf "%.2f", (b-a)/hz}')" \
    "$(awk -v a="$m0" -v b="$m1" -v hz="$hz" 'BEGIN{printf "%.2f", (b-a)/hz}')" \
    "$(awk -v a="$s0" -v b="$s1" -v hz="$hz" 'BEGIN{printf "%.2f", (b-a)/hz}')" "$(rss_mib "$pid")" \
    "$line" | tee -a "$RESULTS"
}

{
  echo "utc_start: $(date -u +%FT%TZ)"
  echo "commit: $(git -C "$REPO" rev-parse HEAD 2>/dev/null || echo unknown)"
  echo "binary: $BIN sha256 $(sha256sum "$BIN" | cut -d' ' -f1)"
  echo "corpus: $CORPUS sha256 $(sha256sum "$CORPUS" | cut -d' ' -f1) lines $(wc -l <"$CORPUS")"
  if [ -n "${MIX:-}" ]; then echo "load: wrk $(wrk -v 2>&1 | head -1 | cut -d' ' -f2), mix $MIX ($(grep -c . "$MIX") bodies)"
  else echo "oha: $("$PEERS_STATE/.tools/bin/oha" --version)"; fi
  echo "python: $("$PEERS_STATE/.venv/bin/python" --version)"
  echo "nproc: $(nproc); cpu: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //')"
  echo "mem: $(free -h | awk '/^Mem:/{print $2}')"
  echo "conc=$CONC secs=$SECS runs=$RUNS warm_secs=$WARM_SECS body=$BODY"
} | tee "$OUT/meta.txt"

TS_URL="http://127.0.0.1:$TS_PORT/retrieve"; LAB_URL="http://127.0.0.1:$LAB_PORT/retrieve"
start_turnstile "$TS_PORT" 2; TS2_PID="$TS_PID"
start_lab "$LAB_PORT"
check turnstile "$TS_URL"; check lab "$LAB_URL"
curl -s "http://127.0.0.1:$TS_PORT/readyz" >"$OUT/turnstile-readyz.json" || true

echo "warm-up (${WARM_SECS}s each, discarded)" >&2
"$LOAD" "$TS_URL" "$BODY" "$CONC" "$WARM_SECS" | sed 's/^/warm turnstile: /' >&2
"$LOAD" "$LAB_URL" "$BODY" "$CONC" "$WARM_SECS" | sed 's/^/warm lab: /' >&2

for run in $(seq 1 "$RUNS"); do
  measure turnstile "$TS2_PID" "$TS_URL" "$run"
  measure lab "$LAB_PID" "$LAB_URL" "$run"
done
curl -s "http://127.0.0.1:$LAB_PORT/state" >"$OUT/lab-state-after.json" || true
curl -s "http://127.0.0.1:$TS_PORT/state" >"$OUT/turnstile-state-after.json" || true
stop "$LAB_PID"; stop "$TS2_PID"

# Informative: turnstile alone with --max-active 4 (no comparison).
if [ "$WITH_MAX_ACTIVE_4" = 1 ]; then
start_turnstile "$TS4_PORT" 4; TS4_PID="$TS_PID"
check turnstile4 "http://127.0.0.1:$TS4_PORT/retrieve"
"$LOAD" "http://127.0.0.1:$TS4_PORT/retrieve" "$BODY" "$CONC" "$WARM_SECS" | sed 's/^/warm turnstile max-active 4: /' >&2
for run in $(seq 1 "$RUNS"); do
  measure turnstile-max-active-4 "$TS4_PID" "http://127.0.0.1:$TS4_PORT/retrieve" "$run"
done
stop "$TS4_PID"
fi
echo "utc_end: $(date -u +%FT%TZ)" | tee -a "$OUT/meta.txt"

"$PEERS_STATE/.venv/bin/python" - "$RESULTS" <<'PYEOF' | tee "$OUT/summary.md"
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
by = {}
for r in rows:
    by.setdefault(r["target"], []).append(r)
print("| target | run | requests | req/s | p50 ms | p99 ms | status | errors | server CPU s | machine busy CPU s | steal CPU s | server RSS MiB | rustc procs before/after | loadavg before |")
print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
for r in rows:
    x = r["result"]
    st = ", ".join(f"{k}: {v}" for k, v in x["status"].items()) or "-"
    er = ", ".join(f"{k}: {v}" for k, v in x["errors"].items()) or "-"
    print(f"| {r['target']} | {r['run']} | {x['requests']} | {x['rps']} | {x['p50_ms']} | {x['p99_ms']} | {st} | {er} | {r['server_cpu_s']} | {r['machine_busy_cpu_s']} | {r.get('steal_cpu_s', '?')} | {r.get('server_rss_mib', '?')} | {r['rustc_before_after']} | {r['loadavg_before']} |")
print()
med = {}
print("| target | median req/s | median p50 ms | median p99 ms | CPU ms per request (server, all runs) |")
print("| --- | --- | --- | --- | --- |")
for t, rs in by.items():
    m = {k: statistics.median(r["result"][k] for r in rs) for k in ("rps", "p50_ms", "p99_ms")}
    cpu = sum(r["server_cpu_s"] for r in rs) / max(1, sum(r["result"]["requests"] for r in rs)) * 1000
    med[t] = m
    print(f"| {t} | {m['rps']} | {m['p50_ms']} | {m['p99_ms']} | {cpu:.3f} |")
if "turnstile" in med and "lab" in med:
    t, l = med["turnstile"], med["lab"]
    print()
    print(f"throughput ratio turnstile/lab (median req/s): {t['rps'] / l['rps']:.2f}x (goal >= 10x)")
    print(f"p99 ratio lab/turnstile (median p99): {l['p99_ms'] / t['p99_ms']:.2f}x")
    print(f"p50 ratio lab/turnstile (median p50): {l['p50_ms'] / t['p50_ms']:.2f}x")
PYEOF
echo "results: $OUT" >&2
