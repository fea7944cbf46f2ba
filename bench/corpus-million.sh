#!/usr/bin/env bash
# What a large corpus costs: for each size (100,000 and 1,000,000 passages mixed from the shipped
# corpus by bench/mix-corpus.py, so that no two are copies), one release server started on an
# empty cache directory:
#
# - the index build (first start until GET /readyz answers) and the index's size on disk;
# - the resume after an interruption: a second empty cache, the server killed (SIGKILL) half way
#   through the build, then started again until ready;
# - resident memory at rest, then under the question mix (bench/mix.jsonl) with wrk at CONC
#   connections for SECS seconds, p50, p99 and requests/s, for the default plugin and then for
#   the lexical one (swapped in over POST /admin/plugin).
#
#   cargo build --release -p turnstile-cli && cargo xtask plugins
#   bench/corpus-million.sh
#
# Environment: TURNSTILE_BIN (target/release/turnstile), SIZES ("100000 1000000"), CONC (16),
#   SECS (15), MIX (bench/mix.jsonl), OUT (/tmp/corpus-million-<UTC>). Needs wrk, curl, ~3 GB
#   of disk per million passages.
set -euo pipefail

REPO="$(cd "$(dirname "$0")/.." && pwd)"
BIN="${TURNSTILE_BIN:-$REPO/target/release/turnstile}"
SIZES="${SIZES:-100000 1000000}"; CONC="${CONC:-16}"; SECS="${SECS:-15}"
export MIX="${MIX:-$REPO/bench/mix.jsonl}"
LEXICAL="$REPO/target/plugins/retrieval.wasm"
OUT="${OUT:-/tmp/corpus-million-$(date -u +%Y%m%dT%H%M%SZ)}"
[ -x "$BIN" ] || { echo "missing $BIN: cargo build --release -p turnstile-cli" >&2; exit 1; }
[ -f "$LEXICAL" ] || { echo "missing $LEXICAL: cargo xtask plugins" >&2; exit 1; }
mkdir -p "$OUT"
WORK="$(mktemp -d /tmp/corpus-million.XXXXXX)"
source "$REPO/bench/pids.sh"
cleanup() { stop_all; rm -rf "$WORK"; }
trap cleanup EXIT

rss_mib() { awk '/^VmRSS/{printf "%.0f", $2 / 1024}' "/proc/$1/status"; }
hwm_mib() { awk '/^VmHWM/{printf "%.0f", $2 / 1024}' "/proc/$1/status"; }
now() { date +%s.%N; }
since() { awk -v a="$1" -v b="$(now)" 'BEGIN{printf "%.1f", b-a}'; }

serve() {  # CORPUS CACHE PORT LOG -> PID
  "$BIN" serve --listen "127.0.0.1:$3" --corpus "$1" --cache-dir "$2" \
    --max-active 2 --max-waiting 64 --wait-ms 10000 --access-log false \
    >"$4" 2>&1 </dev/null &
  echo $!
}

{
  echo "utc_start: $(date -u +%FT%TZ)"
  echo "commit: $(git -C "$REPO" rev-parse HEAD 2>/dev/null || echo unknown)"
  echo "binary: $BIN sha256 $(sha256sum "$BIN" | cut -d' ' -f1)"
  echo "sizes: $SIZES; conc=$CONC secs=$SECS; mix $MIX"
} | tee "$OUT/meta.txt"

port=18190
for size in $SIZES; do
  corpus="$WORK/corpus-$size.jsonl"
  python3 "$REPO/bench/mix-corpus.py" "$size" "$REPO/corpus/python-summaries.jsonl" >"$corpus"
  bytes="$(stat -c %s "$corpus")"

  # The build, from an empty cache.
  port=$((port + 1)); cache="$WORK/cache-$size"; mkdir -p "$cache"
  t0="$(now)"; pid="$(serve "$corpus" "$cache" "$port" "$OUT/$size.log")"; PIDS+=("$pid")
  wait_ready "$size" "$pid" "http://127.0.0.1:$port/readyz" "$OUT/$size.log" 36000
  build_s="$(since "$t0")"; build_peak="$(hwm_mib "$pid")"
  index_mib="$(du -sm "$cache" | cut -f1)"
  rest="$(rss_mib "$pid")"

  rows=""
  for plugin in default lexical; do
    if [ "$plugin" = lexical ]; then
      curl -fsS -o /dev/null -H 'content-type: application/json' \
        -d "{\"path\": \"$LEXICAL\"}" "http://127.0.0.1:$port/admin/plugin"
    fi
    "$REPO/bench/wrk-load.sh" "http://127.0.0.1:$port/retrieve" - "$CONC" 3 >/dev/null
    line="$("$REPO/bench/wrk-load.sh" "http://127.0.0.1:$port/retrieve" - "$CONC" "$SECS")"
    rows+="{\"plugin\": \"$plugin\", \"rss_mib\": $(rss_mib "$pid"), \"result\": $line},"
  done
  stop_pid "$pid"

  # The resume: killed half way through a build, then started again.
  port=$((port + 1)); cache2="$WORK/cache-$size-resume"; mkdir -p "$cache2"
  pid="$(serve "$corpus" "$cache2" "$port" "$OUT/$size-interrupted.log")"; PIDS+=("$pid")
  sleep "$(awk -v b="$build_s" 'BEGIN{printf "%.1f", b/2}')"
  kill -9 "$pid" 2>/dev/null || true
  t0="$(now)"; pid="$(serve "$corpus" "$cache2" "$port" "$OUT/$size-resumed.log")"; PIDS+=("$pid")
  wait_ready "$size-resumed" "$pid" "http://127.0.0.1:$port/readyz" "$OUT/$size-resumed.log" 36000
  resume_s="$(since "$t0")"
  stop_pid "$pid"
  rm -rf "$cache" "$cache2"

  printf '{"passages": %s, "corpus_bytes": %s, "build_s": %s, "build_peak_rss_mib": %s, "index_mib": %s, "rest_rss_mib": %s, "resume_s": %s, "plugins": [%s]}\n' \
    "$size" "$bytes" "$build_s" "$build_peak" "$index_mib" "$rest" "$resume_s" "${rows%,}" \
    | tee -a "$OUT/results.jsonl"
  rm -f "$corpus"
done
echo "utc_end: $(date -u +%FT%TZ)" | tee -a "$OUT/meta.txt"

python3 - "$OUT/results.jsonl" <<'PYEOF' | tee "$OUT/summary.md"
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
print("| passages | corpus MB | index build s (goal ≤ 600 at 1M) | resumed after a kill, s | index MiB | peak RSS in build MiB | RSS at rest MiB | plugin | RSS under load MiB (goal ≤ 3,072) | req/s | p50 ms | p99 ms (goal ≤ 25 lexical, ≤ 50 default) |")
print("| ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- | ---: | ---: | ---: | ---: |")
for r in rows:
    for p in r["plugins"]:
        res = p["result"]
        print(f"| {r['passages']:,} | {r['corpus_bytes'] / 1e6:.0f} | {r['build_s']} | {r['resume_s']} | {r['index_mib']} | {r['build_peak_rss_mib']} | {r['rest_rss_mib']} | {p['plugin']} | {p['rss_mib']} | {res['rps']} | {res['p50_ms']} | {res['p99_ms']} |")
PYEOF
echo "results: $OUT" >&2
