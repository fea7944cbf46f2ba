#!/usr/bin/env bash
# Where a request's time goes as the corpus grows: for each size (passages mixed from the shipped
# corpus by bench/mix-corpus.py, as bench/corpus-million.sh does), one release server, and for
# the default plugin and then the lexical one, the question mix (bench/mix.jsonl) with wrk at
# CONC connections for SECS seconds. The server's own metrics, scraped before and after, split
# each admitted request's plugin call (`turnstile_gate_execution_seconds`) into:
#
# - its instance (`turnstile_plugin_instantiate_seconds`);
# - each kind of corpus host call (`turnstile_corpus_host_call_seconds{kind}`: `search` over the
#   term index, `rank`, `snippet`, `nearest` over the document vectors, `embed`, …), calls and ms
#   per request;
# - the rest: the plugin's own code (tokenizing, fusing, copying results) and the host's checks.
#
# and p50/p99 and requests/s as clients saw them (queueing at the gate included: CONC clients,
# --max-active 2). A second table: the index build (a first start, when KEEP has no index yet)
# and its peak memory, the time a start on the reused index takes until /readyz, resident memory
# at rest and its peak under the load, and the index file's size. Corpora and their index caches are kept in KEEP, so a second run (another
# binary, another mix) starts in seconds instead of rebuilding a million-passage index.
#
#   cargo build --release -p turnstile-cli && cargo xtask plugins
#   bench/corpus-cost.sh [SIZE...]                 (default: 6090 100000 1000000)
#
# Environment: TURNSTILE_BIN (target/release/turnstile), CONC (16), SECS (20), MIX
#   (bench/mix.jsonl), KEEP (/tmp/turnstile-corpus-cost), OUT (/tmp/corpus-cost-<UTC>). Needs
#   wrk, curl, ~3 GB of disk per million passages.
set -euo pipefail

REPO="$(cd "$(dirname "$0")/.." && pwd)"
BIN="${TURNSTILE_BIN:-$REPO/target/release/turnstile}"
CONC="${CONC:-16}"; SECS="${SECS:-20}"
export MIX="${MIX:-$REPO/bench/mix.jsonl}"
LEXICAL="$REPO/target/plugins/retrieval.wasm"
KEEP="${KEEP:-/tmp/turnstile-corpus-cost}"
OUT="${OUT:-/tmp/corpus-cost-$(date -u +%Y%m%dT%H%M%SZ)}"
SIZES=("$@"); [ ${#SIZES[@]} -gt 0 ] || SIZES=(6090 100000 1000000)
[ -x "$BIN" ] || { echo "missing $BIN: cargo build --release -p turnstile-cli" >&2; exit 1; }
[ -f "$LEXICAL" ] || { echo "missing $LEXICAL: cargo xtask plugins" >&2; exit 1; }
LEXICAL="$(realpath "$LEXICAL")"  # swaps read only under --swap-root, links resolved
mkdir -p "$OUT" "$KEEP"
source "$REPO/bench/pids.sh"
trap stop_all EXIT

{
  echo "utc_start: $(date -u +%FT%TZ)"
  echo "commit: $(git -C "$REPO" rev-parse HEAD 2>/dev/null || echo unknown)"
  echo "binary: $BIN sha256 $(sha256sum "$BIN" | cut -d' ' -f1)"
  echo "sizes: ${SIZES[*]}; conc=$CONC secs=$SECS; mix $MIX"
} | tee "$OUT/meta.txt"

port=18290
for size in "${SIZES[@]}"; do
  corpus="$KEEP/corpus-$size.jsonl"; cache="$KEEP/cache-$size"
  if [ ! -s "$corpus" ]; then
    python3 "$REPO/bench/mix-corpus.py" "$size" "$REPO/corpus/python-summaries.jsonl" >"$corpus.partial"
    mv "$corpus.partial" "$corpus"
  fi
  mkdir -p "$cache"
  rss_mib() { awk '/^VmRSS/{printf "%.0f", $2 / 1024}' "/proc/$1/status"; }
  hwm_mib() { awk '/^VmHWM/{printf "%.0f", $2 / 1024}' "/proc/$1/status"; }
  start_server() {  # -> pid in $pid, seconds to ready in $ready_s
    port=$((port + 1))
    local t0; t0=$(date +%s.%N)
    "$BIN" serve --listen "127.0.0.1:$port" --corpus "$corpus" --cache-dir "$cache" \
      --max-active 2 --max-waiting 64 --wait-ms 10000 --access-log false \
      --swap-root "$(dirname "$LEXICAL")" \
      >>"$OUT/$size.log" 2>&1 </dev/null &
    pid=$!; PIDS+=("$pid")
    wait_ready "$size" "$pid" "http://127.0.0.1:$port/readyz" "$OUT/$size.log" 72000
    ready_s=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN{printf "%.2f", b-a}')
  }
  # An index not in KEEP yet is built by a first start (its time and peak memory recorded),
  # which is stopped; the measured server then opens the index as a reused one.
  build_s="-"; build_hwm="-"
  if ! ls "$cache"/index/corpus-*.sqlite >/dev/null 2>&1; then
    start_server; build_s=$ready_s; build_hwm=$(hwm_mib "$pid")
    stop_pid "$pid"
  fi
  start_server
  echo "$size $build_s $build_hwm $ready_s $(rss_mib "$pid")" >"$OUT/$size.start"
  for plugin in default lexical; do
    if [ "$plugin" = lexical ]; then
      curl -fsS -o /dev/null -H 'content-type: application/json' \
        -d "{\"path\": \"$LEXICAL\"}" "http://127.0.0.1:$port/admin/plugin"
    fi
    "$REPO/bench/wrk-load.sh" "http://127.0.0.1:$port/retrieve" - "$CONC" 3 >/dev/null
    curl -fsS "http://127.0.0.1:$port/metrics" >"$OUT/$size-$plugin.before.prom"
    "$REPO/bench/wrk-load.sh" "http://127.0.0.1:$port/retrieve" - "$CONC" "$SECS" \
      >"$OUT/$size-$plugin.load.json"
    curl -fsS "http://127.0.0.1:$port/metrics" >"$OUT/$size-$plugin.after.prom"
  done
  echo "$(hwm_mib "$pid") $(du -m "$cache"/index/corpus-*.sqlite | awk '{s += $1} END {print s}')" >>"$OUT/$size.start"
  stop_pid "$pid"
done
echo "utc_end: $(date -u +%FT%TZ)" | tee -a "$OUT/meta.txt"

python3 - "$OUT" "${SIZES[@]}" <<'PYEOF' | tee "$OUT/summary.md"
import json, re, sys
out, sizes = sys.argv[1], sys.argv[2:]
line = re.compile(r'^([a-z_]+)(\{[^}]*\})?\s+([0-9.eE+-]+)$')
def scrape(path):
    values = {}
    for l in open(path):
        m = line.match(l.strip())
        if m:
            values[(m.group(1), m.group(2) or "")] = float(m.group(3))
    return values
def delta(a, b, name, labels=""):
    return b.get((name, labels), 0.0) - a.get((name, labels), 0.0)
kinds = ["open", "search", "rank", "snippet", "get", "count", "nearest", "embed"]
head = ["passages", "plugin", "req/s", "p50 ms", "p99 ms", "call ms/req", "instance ms"]
head += [f"{k} calls·ms/req" for k in kinds] + ["plugin's own ms/req"]
print("| " + " | ".join(head) + " |")
print("|" + "---:|" * len(head))
for size in sizes:
    for plugin in ["default", "lexical"]:
        a = scrape(f"{out}/{size}-{plugin}.before.prom")
        b = scrape(f"{out}/{size}-{plugin}.after.prom")
        load = json.load(open(f"{out}/{size}-{plugin}.load.json"))
        calls = delta(a, b, "turnstile_gate_execution_seconds_count")
        if calls == 0:
            continue
        execution = delta(a, b, "turnstile_gate_execution_seconds_sum") / calls * 1e3
        instance = delta(a, b, "turnstile_plugin_instantiate_seconds_sum") / calls * 1e3
        row = [f"{int(size):,}", plugin, f"{load['rps']:.1f}", f"{load['p50_ms']:.2f}",
               f"{load['p99_ms']:.2f}", f"{execution:.2f}", f"{instance:.2f}"]
        hosted = 0.0
        for kind in kinds:
            n = sum(delta(a, b, "turnstile_corpus_host_calls_total", labels)
                    for (name, labels) in b if name == "turnstile_corpus_host_calls_total"
                    and f'kind="{kind}"' in labels) / calls
            ms = delta(a, b, "turnstile_corpus_host_call_seconds_sum", f'{{kind="{kind}"}}') / calls * 1e3
            hosted += ms
            row.append(f"{n:.1f} · {ms:.2f}" if n else "–")
        row.append(f"{execution - instance - hosted:.2f}")
        print("| " + " | ".join(row) + " |")
print()
print("| passages | index build s (first start) | peak RSS building MiB | reused index: start to ready s | RSS at rest MiB | peak RSS under load MiB | index file MiB |")
print("| ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
for size in sizes:
    first, second = open(f"{out}/{size}.start").read().split("\n")[:2]
    _, build_s, build_hwm, ready_s, rest = first.split()
    peak, file_mib = second.split()
    print(f"| {int(size):,} | {build_s} | {build_hwm} | {ready_s} | {rest} | {peak} | {file_mib} |")
PYEOF
echo "results: $OUT" >&2
