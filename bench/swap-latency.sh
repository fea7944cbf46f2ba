#!/usr/bin/env bash
# Hot-swap latency: from `POST /admin/plugin` to the new generation serving (the call returns
# once the candidate is read, hashed, compiled or loaded from the precompiled cache, checked,
# smoke-tested and installed), for the default retrieval plugin, with and without the cache.
#
#   cargo build --release -p turnstile-cli && bench/swap-latency.sh
#
# Environment: TURNSTILE_BIN (target/release/turnstile), PLUGIN (target/plugins/retrieval.wasm),
#   SWAPS (5), PORT (18090), CORPUS (unset: the embedded corpus; e.g. a 16x corpus made by
#   bench/replicate-corpus.py, where loading the corpus into a candidate's pool would show).
#   Prints one line per swap and the median of each mode.
set -euo pipefail

REPO="$(cd "$(dirname "$0")/.." && pwd)"
BIN="${TURNSTILE_BIN:-$REPO/target/release/turnstile}"
PLUGIN="${PLUGIN:-$REPO/target/plugins/retrieval.wasm}"
SWAPS="${SWAPS:-5}"
PORT="${PORT:-18090}"
[ -x "$BIN" ] || { echo "missing $BIN: cargo build --release -p turnstile-cli" >&2; exit 1; }
[ -f "$PLUGIN" ] || { echo "missing $PLUGIN: cargo xtask plugins" >&2; exit 1; }

CACHE="$(mktemp -d /tmp/swap-latency.XXXXXX)"
PID=""
cleanup() {
  [ -n "$PID" ] && kill "$PID" 2>/dev/null && wait "$PID" 2>/dev/null || true
  rm -rf "$CACHE"
}
trap cleanup EXIT

median() { sort -n | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }

measure() {  # LABEL [serve flags...]
  local label="$1"; shift
  "$BIN" serve --listen "127.0.0.1:$PORT" --cache-dir "$CACHE" ${CORPUS:+--corpus "$CORPUS"} "$@" \
    >"$CACHE/$label.log" 2>&1 &
  PID=$!
  for _ in $(seq 1 1200); do  # a 16x corpus's first start builds its index: ~25 s
    curl -fsS "http://127.0.0.1:$PORT/readyz" >/dev/null 2>&1 && break
    sleep 0.1
  done
  local times=()
  for i in $(seq 1 "$SWAPS"); do
    local out
    out="$(curl -sS -o "$CACHE/body.json" -w '%{http_code} %{time_total}' -X POST \
      -H 'content-type: application/json' \
      -d "{\"path\": \"$PLUGIN\"}" "http://127.0.0.1:$PORT/admin/plugin")"
    local code="${out% *}" secs="${out#* }"
    [ "$code" = 200 ] || { echo "swap $i: HTTP $code: $(cat "$CACHE/body.json")" >&2; exit 1; }
    local ms; ms="$(awk -v s="$secs" 'BEGIN {printf "%.1f", s * 1000}')"
    echo "$label swap $i: ${ms} ms, $(cat "$CACHE/body.json")"
    times+=("$ms")
  done
  echo "$label median: $(printf '%s\n' "${times[@]}" | median) ms over $SWAPS swaps"
  kill "$PID"; wait "$PID" 2>/dev/null || true; PID=""
}

measure cached
measure uncached --no-precompiled-cache
