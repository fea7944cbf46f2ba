#!/usr/bin/env bash
# A corpus swapped under load: one release server on the shipped-size corpus (6,090 passages
# mixed by bench/mix-corpus.py), wrk with the question mix at CONC connections for 3 x STEP
# seconds; after STEP seconds `POST /admin/corpus` swaps to SIZE passages, after 2 x STEP back to
# the first corpus (whose index is then reused). Reports each swap's answer (swap_ms, index
# built or reused, smoke checks), resident memory before, after each swap and once the old
# corpus is freed (`/readyz` corpus.retired_in_memory back to 0), and wrk's statuses, p50 and
# p99 over the whole run: a swap under load must lose no request.
#
#   cargo build --release -p turnstile-cli
#   bench/corpus-swap.sh
#
# Environment: TURNSTILE_BIN (target/release/turnstile), SIZE (100000), STEP (10), CONC (16),
#   KEEP (/tmp/turnstile-corpus-cost: corpora and their index caches, shared with
#   bench/corpus-cost.sh), OUT (/tmp/corpus-swap-<UTC>). Needs wrk and curl.
set -euo pipefail

REPO="$(cd "$(dirname "$0")/.." && pwd)"
BIN="${TURNSTILE_BIN:-$REPO/target/release/turnstile}"
SIZE="${SIZE:-100000}"; STEP="${STEP:-10}"; CONC="${CONC:-16}"
KEEP="${KEEP:-/tmp/turnstile-corpus-cost}"
OUT="${OUT:-/tmp/corpus-swap-$(date -u +%Y%m%dT%H%M%SZ)}"
export MIX="${MIX:-$REPO/bench/mix.jsonl}"
[ -x "$BIN" ] || { echo "missing $BIN: cargo build --release -p turnstile-cli" >&2; exit 1; }
mkdir -p "$OUT" "$KEEP"
source "$REPO/bench/pids.sh"
trap stop_all EXIT

corpus() {  # PASSAGES -> path of the mixed corpus (made once)
  local path="$KEEP/corpus-$1.jsonl"
  if [ ! -s "$path" ]; then
    python3 "$REPO/bench/mix-corpus.py" "$1" "$REPO/corpus/python-summaries.jsonl" >"$path.partial"
    mv "$path.partial" "$path"
  fi
  echo "$path"
}
small="$(corpus 6090)"; large="$(corpus "$SIZE")"
cache="$KEEP/cache-$SIZE"; mkdir -p "$cache"  # the large corpus's index is reused when there
rss_mib() { awk '/^VmRSS/{printf "%.0f", $2 / 1024}' "/proc/$1/status"; }

port=18590
"$BIN" serve --listen "127.0.0.1:$port" --corpus "$small" --cache-dir "$cache" \
  --max-active 2 --max-waiting 64 --wait-ms 10000 --access-log false \
  >"$OUT/server.log" 2>&1 </dev/null &
pid=$!; PIDS+=("$pid")
wait_ready server "$pid" "http://127.0.0.1:$port/readyz" "$OUT/server.log" 6000
{
  echo "utc_start: $(date -u +%FT%TZ)"
  echo "commit: $(git -C "$REPO" rev-parse HEAD 2>/dev/null || echo unknown)"
  echo "binary: $BIN sha256 $(sha256sum "$BIN" | cut -d' ' -f1)"
  echo "from $small to $large and back; step=${STEP}s conc=$CONC"
  echo "rss_before_mib: $(rss_mib "$pid")"
} | tee "$OUT/meta.txt"

"$REPO/bench/wrk-load.sh" "http://127.0.0.1:$port/retrieve" - "$CONC" $((3 * STEP)) >"$OUT/wrk.json" &
load=$!
swap() {  # NAME PATH
  curl -fsS -H 'content-type: application/json' -d "{\"path\": \"$2\"}" \
    "http://127.0.0.1:$port/admin/corpus" >"$OUT/$1.json"
  echo "$1: $(cat "$OUT/$1.json")" | tee -a "$OUT/meta.txt"
  echo "rss_after_$1_mib: $(rss_mib "$pid")" | tee -a "$OUT/meta.txt"
}
sleep "$STEP"; swap to-large "$large"
sleep "$STEP"; swap back "$small"
wait "$load"
for _ in $(seq 1 100); do
  retired="$(curl -fsS "http://127.0.0.1:$port/readyz" | python3 -c 'import json,sys; print(json.load(sys.stdin)["corpus"]["retired_in_memory"])')"
  [ "$retired" = 0 ] && break
  sleep 0.1
done
echo "retired_in_memory_after_load: $retired" | tee -a "$OUT/meta.txt"
echo "rss_after_load_mib: $(rss_mib "$pid")" | tee -a "$OUT/meta.txt"
echo "wrk: $(cat "$OUT/wrk.json")" | tee -a "$OUT/meta.txt"
echo "utc_end: $(date -u +%FT%TZ)" | tee -a "$OUT/meta.txt"
echo "results: $OUT" >&2
