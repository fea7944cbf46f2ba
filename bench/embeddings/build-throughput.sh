#!/usr/bin/env bash
# Index build through a remote model against the model server alone (issue 50's goal: the build
# reaches >= 90 % of what the server does alone at the same batch size). One server
# (bench/embeddings/server.py, MiniLM by default), the first N passages of the shipped corpus,
# alternating ROUNDS times: the server alone (bench/embeddings/throughput.py, batch B, F in flight)
# and `turnstile eval` building a fresh index of the same passages through it (the same batch and
# in-flight; its "passages embedded" line gives the seconds spent embedding). Prints each round
# and the median ratio.
#
#   bench/embeddings/build-throughput.sh [N=1024] [ROUNDS=2]
#
# Env: KIND (minilm|mpnet), MODELS (target/embed-bench), BATCH (64), IN_FLIGHT (2),
# TURNSTILE_BIN (target/release/turnstile), PY (target/embed-bench-venv/bin/python).
set -euo pipefail
cd "$(dirname "$0")/../.."
N="${1:-1024}"
ROUNDS="${2:-2}"
KIND="${KIND:-minilm}"
MODELS="${MODELS:-target/embed-bench}"
BATCH="${BATCH:-64}"
IN_FLIGHT="${IN_FLIGHT:-2}"
BIN="${TURNSTILE_BIN:-target/release/turnstile}"
PY="${PY:-target/embed-bench-venv/bin/python}"
WORK=$(mktemp -d)
trap 'kill $server 2>/dev/null || true; rm -rf "$WORK"' EXIT

head -n "$N" corpus/python-summaries.jsonl > "$WORK/corpus.jsonl"
echo '{"q": "read a file", "expect": ["io.open"]}' > "$WORK/q.jsonl"
"$PY" bench/embeddings/server.py --kind "$KIND" --model-dir "$MODELS/$KIND" --name "$KIND" \
  --port 0 --quiet > "$WORK/server.log" 2>&1 &
server=$!
for _ in $(seq 600); do grep -q "listening on" "$WORK/server.log" && break; sleep 0.5; done
url=$(sed -n 's/^listening on //p' "$WORK/server.log" | head -1)
# Warm the server (first requests pay numpy's and the tokenizer's start).
python3 bench/embeddings/throughput.py --url "$url" --batch "$BATCH" --in-flight 1 --limit "$BATCH" \
  --corpus "$WORK/corpus.jsonl" > /dev/null

ratios=()
for round in $(seq "$ROUNDS"); do
  alone=$(python3 bench/embeddings/throughput.py --url "$url" --batch "$BATCH" --in-flight "$IN_FLIGHT" \
    --limit "$N" --corpus "$WORK/corpus.jsonl" --json | tail -1 |
    python3 -c 'import json,sys; print(json.load(sys.stdin)["passages_per_s"])')
  rm -rf "$WORK/cache"
  "$BIN" eval "$WORK/q.jsonl" --json --corpus "$WORK/corpus.jsonl" --cache-dir "$WORK/cache" \
    --embeddings "$url" --embeddings-model "$KIND" --embeddings-batch "$BATCH" \
    --embeddings-in-flight "$IN_FLIGHT" --embeddings-timeout-ms 600000 > /dev/null 2> "$WORK/eval.log"
  seconds=$(grep "passages embedded" "$WORK/eval.log" | sed -n 's/.*seconds=\([0-9.]*\).*/\1/p')
  built=$(echo "scale=2; $N / $seconds" | bc)
  ratio=$(echo "scale=3; $built / $alone" | bc)
  ratios+=("$ratio")
  echo "round $round: server alone $alone passages/s, turnstile's build $built passages/s ($seconds s): ratio $ratio"
done
printf '%s\n' "${ratios[@]}" | sort -n | awk '{a[NR]=$1} END {m = (NR % 2) ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2; print "median ratio " m}'
