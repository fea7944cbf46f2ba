#!/usr/bin/env bash
# The adaptive limit against the best fixed one, measured with `turnstile load` on the cpu
# fixture (ITERATIONS rounds of integer work per call: calls past the machine's cores slow each
# other down, as an inference or database backend does past its capacity):
#
#   fixed-N    --max-active N for N in FIXED, USERS closed-loop users, SECS seconds each: the
#              sweep that finds the best fixed limit and the capacity (the smallest limit within
#              5 % of the best throughput);
#   auto-1     --max-active auto starting at 1 (ceiling 64), USERS users, 2 x SECS seconds;
#   auto-64    the same starting at 64;
#   step       --max-active auto, USERS -> 4 -> USERS users, SECS seconds each.
#
# In every run the limit (`/state` max_active) is sampled every 0.25 s; "settled" is the
# first time after which it stays within [capacity / 2, 2 x capacity] (a probe halves the limit
# for a moment to measure the baseline). Goal (issue 29): settled within 30 s,
# throughput >= 90 % of the best fixed limit's, p99 <= 1.5 x its p99; after the step, settled
# again within 30 s.
#
#   cargo build --release -p turnstile-cli && cargo xtask plugins
#   bench/adaptive.sh
#
# Environment: TURNSTILE_BIN (target/release/turnstile), USERS (32), SECS (20), ITERATIONS
#   (3000000), FIXED ("1 2 3 4 6 8 16"), OUT (/tmp/adaptive-<UTC>); PLUGIN and PLUGIN_CONFIG
#   for another backend, e.g. one that does not saturate (a remote model server's shape):
#   PLUGIN=target/plugins/delay.wasm PLUGIN_CONFIG=delay_ms=50 FIXED="4 8 16 32 64" bench/adaptive.sh
set -euo pipefail

REPO="$(cd "$(dirname "$0")/.." && pwd)"
BIN="${TURNSTILE_BIN:-$REPO/target/release/turnstile}"
USERS="${USERS:-32}"; SECS="${SECS:-20}"; ITERATIONS="${ITERATIONS:-3000000}"
FIXED="${FIXED:-1 2 3 4 6 8 16}"
CPU="${PLUGIN:-$REPO/target/plugins/cpu.wasm}"
PLUGIN_CONFIG="${PLUGIN_CONFIG:-iterations=$ITERATIONS}"
OUT="${OUT:-/tmp/adaptive-$(date -u +%Y%m%dT%H%M%SZ)}"
[ -x "$BIN" ] || { echo "missing $BIN: cargo build --release -p turnstile-cli" >&2; exit 1; }
[ -f "$CPU" ] || { echo "missing $CPU: cargo xtask plugins" >&2; exit 1; }
mkdir -p "$OUT"
source "$REPO/bench/pids.sh"
trap stop_all EXIT

{
  echo "utc_start: $(date -u +%FT%TZ)"
  echo "commit: $(git -C "$REPO" rev-parse HEAD 2>/dev/null || echo unknown)"
  echo "binary: $BIN sha256 $(sha256sum "$BIN" | cut -d' ' -f1)"
  echo "users=$USERS secs=$SECS plugin=$CPU config=$PLUGIN_CONFIG fixed=$FIXED cores=$(nproc)"
} | tee "$OUT/meta.txt"

port=18490
serve() {  # FLAGS...
  port=$((port + 1))
  "$BIN" serve --listen "127.0.0.1:$port" --plugin "$CPU" --plugin-config "$PLUGIN_CONFIG" \
    --max-waiting 128 --wait-ms 30000 --access-log false "$@" \
    >"$OUT/server-$port.log" 2>&1 </dev/null &
  PIDS+=("$!")
  wait_ready "server" "$!" "http://127.0.0.1:$port/readyz" "$OUT/server-$port.log" 600
}
load() {  # NAME USERS SECONDS
  "$BIN" load --url "http://127.0.0.1:$port/retrieve" --users "$2" --spawn-rate 1000 \
    --duration "$3" --output "$OUT/$1" --quiet >"$OUT/$1.txt"
}
trace() {  # FILE: one "seconds limit active waiting" line every 0.25 s until killed; one
  # process polling over one connection (a process per sample would take CPU from the calls)
  exec python3 - "http://127.0.0.1:$port/state" "$1" <<'PYEOF'
import http.client, json, sys, time, urllib.parse
url, out = urllib.parse.urlparse(sys.argv[1]), open(sys.argv[2], "a", buffering=1)
conn, t0 = http.client.HTTPConnection(url.hostname, url.port, timeout=2), time.time()
while True:
    try:
        conn.request("GET", url.path)
        s = json.loads(conn.getresponse().read())
        out.write(f"{time.time() - t0:.2f} {s['max_active']} {s['active']} {s['waiting']}\n")
    except Exception:
        conn.close()
        conn = http.client.HTTPConnection(url.hostname, url.port, timeout=2)
    time.sleep(0.25)
PYEOF
}

for n in $FIXED; do
  serve --max-active "$n"
  trace "$OUT/fixed-$n.limit" & tracer=$!  # the same sampling in every run
  load "fixed-$n" "$USERS" "$SECS"
  kill "$tracer"; wait "$tracer" 2>/dev/null || true
  stop_all; PIDS=()
done

for start in 1 64; do
  serve --max-active auto --max-active-max 64 --max-active-initial "$start"
  trace "$OUT/auto-$start.limit" & tracer=$!
  load "auto-$start" "$USERS" $((2 * SECS))
  kill "$tracer"; wait "$tracer" 2>/dev/null || true
  stop_all; PIDS=()
done

serve --max-active auto --max-active-max 64
trace "$OUT/step.limit" & tracer=$!
load step-1 "$USERS" "$SECS"
load step-2 4 "$SECS"
load step-3 "$USERS" "$SECS"
kill "$tracer"; wait "$tracer" 2>/dev/null || true
stop_all; PIDS=()
echo "utc_end: $(date -u +%FT%TZ)" | tee -a "$OUT/meta.txt"

python3 - "$OUT" "$FIXED" "$SECS" <<'PYEOF' | tee "$OUT/summary.md"
import json, sys
out, fixed, secs = sys.argv[1], [int(n) for n in sys.argv[2].split()], float(sys.argv[3])
def run(name):
    s = json.load(open(f"{out}/{name}/summary.json"))
    ok = s["statuses"].get("200", 0)
    return {"rps": ok / s["elapsed_s"], "p50": s["latency_ms"]["p50"], "p99": s["latency_ms"]["p99"],
            "requests": s["requests"], "ok": ok}
rows = {f"fixed-{n}": run(f"fixed-{n}") for n in fixed}
best_name = max(rows, key=lambda k: rows[k]["rps"])
best = rows[best_name]
capacity = min(n for n in fixed if rows[f"fixed-{n}"]["rps"] >= 0.95 * best["rps"])
def trace(name):
    return [tuple(float(x) for x in l.split()) for l in open(f"{out}/{name}.limit") if l.strip()]
def settled(points, start=0.0):
    """First time from `start` after which the limit stays in [capacity / 2, 2 x capacity] (a
    probe halves the limit for a moment)."""
    points = [p for p in points if p[0] >= start]
    inside = lambda l: capacity / 2 <= l <= 2 * capacity
    last_out = None
    for t, limit, *_ in points:
        if not inside(limit):
            last_out = t
    if last_out is None:
        return 0.0 if points else None
    after = [p for p in points if p[0] > last_out]
    return (after[0][0] - start) if after else None
print(f"capacity (smallest fixed limit within 5 % of the best throughput): {capacity}; best fixed: {best_name}")
print()
print("| run | answered/s | p50 ms | p99 ms | vs best: throughput | vs best: p99 | limit at the end | settled after s |")
print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
for name, r in rows.items():
    print(f"| {name} | {r['rps']:.1f} | {r['p50']:.1f} | {r['p99']:.1f} | {r['rps'] / best['rps']:.0%} | {r['p99'] / best['p99']:.2f} | | |")
for name in ["auto-1", "auto-64"]:
    r = run(name); points = trace(name)
    s = settled(points)
    print(f"| {name} | {r['rps']:.1f} | {r['p50']:.1f} | {r['p99']:.1f} | {r['rps'] / best['rps']:.0%} | {r['p99'] / best['p99']:.2f} | {int(points[-1][1]) if points else '?'} | {s if s is not None else 'never'} |")
points = trace("step")
for i, name in enumerate(["step-1", "step-2", "step-3"]):
    r = run(name)
    s = settled(points, start=i * secs)
    print(f"| {name} ({'4' if i == 1 else 'all'} users) | {r['rps']:.1f} | {r['p50']:.1f} | {r['p99']:.1f} | | | | {s if s is not None else 'never'} |")
PYEOF
echo "results: $OUT" >&2
