#!/usr/bin/env bash
# Fairness between flows, measured with `turnstile load`: a noisy flow (NOISY closed-loop users,
# a batch job) and a quiet one (QUIET users, an interactive client) against one release server
# with the delay fixture (DELAY_MS per call), --max-active 4 and --max-waiting 32:
#
#   alone      the quiet flow by itself (its baseline p99 and rate);
#   flows off  both flows at once, today's one FIFO (the noisy flow fills the queue);
#   flows on   both at once with --flow-header x-tenant --max-waiting-per-flow 24: a lane each,
#              served in turn.
#
# Goal (issue 29): with flows on, the quiet flow's p99 within 2x of its p99 alone, and at least
# 90 % of the requests it sends answered 200. Each run writes `turnstile load`'s summary.json
# and charts under OUT/<scenario>-<flow>/.
#
#   cargo build --release -p turnstile-cli && cargo xtask plugins
#   bench/fairness.sh
#
# Environment: TURNSTILE_BIN (target/release/turnstile), SECS (30), NOISY (48), QUIET (2),
#   DELAY_MS (50), OUT (/tmp/fairness-<UTC>).
set -euo pipefail

REPO="$(cd "$(dirname "$0")/.." && pwd)"
BIN="${TURNSTILE_BIN:-$REPO/target/release/turnstile}"
SECS="${SECS:-30}"; NOISY="${NOISY:-48}"; QUIET="${QUIET:-2}"; DELAY_MS="${DELAY_MS:-50}"
DELAY="$REPO/target/plugins/delay.wasm"
OUT="${OUT:-/tmp/fairness-$(date -u +%Y%m%dT%H%M%SZ)}"
[ -x "$BIN" ] || { echo "missing $BIN: cargo build --release -p turnstile-cli" >&2; exit 1; }
[ -f "$DELAY" ] || { echo "missing $DELAY: cargo xtask plugins" >&2; exit 1; }
mkdir -p "$OUT"
source "$REPO/bench/pids.sh"
trap stop_all EXIT

{
  echo "utc_start: $(date -u +%FT%TZ)"
  echo "commit: $(git -C "$REPO" rev-parse HEAD 2>/dev/null || echo unknown)"
  echo "binary: $BIN sha256 $(sha256sum "$BIN" | cut -d' ' -f1)"
  echo "noisy=$NOISY quiet=$QUIET secs=$SECS delay_ms=$DELAY_MS max_active=4 max_waiting=32"
} | tee "$OUT/meta.txt"

port=18390
serve() {  # FLAGS... -> PID
  port=$((port + 1))
  "$BIN" serve --listen "127.0.0.1:$port" --plugin "$DELAY" --plugin-config "delay_ms=$DELAY_MS" \
    --max-active 4 --max-waiting 32 --wait-ms 10000 --access-log false "$@" \
    >"$OUT/server-$port.log" 2>&1 </dev/null &
  PIDS+=("$!")
  wait_ready "server" "$!" "http://127.0.0.1:$port/readyz" "$OUT/server-$port.log" 600
}

load() {  # NAME USERS TENANT
  "$BIN" load --url "http://127.0.0.1:$port/retrieve" --users "$2" --spawn-rate 1000 \
    --duration "$SECS" --header "x-tenant: $3" --output "$OUT/$1" --quiet >"$OUT/$1.txt"
}

serve
load alone-quiet "$QUIET" quiet
stop_all; PIDS=()

serve
load off-noisy "$NOISY" noisy & noisy=$!
load off-quiet "$QUIET" quiet
wait "$noisy"
stop_all; PIDS=()

serve --flow-header x-tenant --max-waiting-per-flow 24
load on-noisy "$NOISY" noisy & noisy=$!
load on-quiet "$QUIET" quiet
wait "$noisy"
stop_all; PIDS=()
echo "utc_end: $(date -u +%FT%TZ)" | tee -a "$OUT/meta.txt"

python3 - "$OUT" <<'PYEOF' | tee "$OUT/summary.md"
import json, sys
out = sys.argv[1]
def run(name):
    s = json.load(open(f"{out}/{name}/summary.json"))
    ok = s["statuses"].get("200", 0)
    return s, ok
alone, alone_ok = run("alone-quiet")
base_p99 = alone["latency_ms"]["p99"]
print("| run | flow | requests | 200 | 200 share | 429 | 503 | answered/s | p50 ms | p99 ms | p99 / alone |")
print("| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
for name in ["alone-quiet", "off-noisy", "off-quiet", "on-noisy", "on-quiet"]:
    s, ok = run(name)
    lat = s["latency_ms"]
    st = s["statuses"]
    run_name, flow = name.split("-")
    print(f"| {run_name} | {flow} | {s['requests']:,} | {ok:,} | {ok / max(s['requests'], 1):.1%} | "
          f"{st.get('429', 0):,} | {st.get('503', 0):,} | {ok / s['elapsed_s']:.1f} | "
          f"{lat['p50']:.1f} | {lat['p99']:.1f} | {lat['p99'] / base_p99:.2f} |")
on, on_ok = run("on-quiet")
met_p99 = on["latency_ms"]["p99"] <= 2 * base_p99
met_share = on_ok >= 0.9 * on["requests"]
print()
print(f"goal, flows on: quiet p99 {on['latency_ms']['p99']:.1f} ms <= 2 x {base_p99:.1f} ms: {'met' if met_p99 else 'NOT met'}; "
      f"quiet 200 share {on_ok / max(on['requests'], 1):.1%} >= 90 %: {'met' if met_share else 'NOT met'}")
PYEOF
echo "results: $OUT" >&2
