"""Trains the distilled static table on the corpus to mimic MPNet (Model2Vec's tokenlearn).

What is learned: U, one 768-d row per WordPiece token, in MPNet's output space, such that a
text's embedding normalise(sum of w[t] * U[t] over its tokens t) -- the static model, w being the
corpus's SIF weights -- approaches MPNet's embedding of the same text (targets.py). Training texts:
each document as "{id} {title} {text}", its title, its first sentence (3 x 6,090 for the shipped
corpus); only tokens occurring in them move.
Start: U0 = (distilled table * w) @ M, M the ridge map (lambda 0.3) from the distilled table's
document embeddings (256-d) to MPNet's (768-d).
Loss: mean over texts of (1 - cos(static, MPNet)) + LAM * ||U - U0||^2, the penalty keeping rows
near their start; rows of tokens absent from the training texts get no gradient and stay.
Optimiser: full-batch Adam, STEPS steps, step size LR * rms(U0); deterministic, no sampling.
Output: U projected on the top 256 principal directions (uncentred SVD) of MPNet's document
embeddings, divided by w again (the index applies the weights at embedding time), float16.
Settings: LAM and STEPS were chosen on a held-out 20 % of the documents (random split, seed 0:
training on the rest, judged by held-out cosines and by how well held-out first sentences, used
as queries, retrieve MPNet's top 10): `--val` repeats that. Never on a question set. They were
chosen with all-MiniLM-L6-v2 as the teacher and re-checked with MPNet (2026-12-02): 3e-7 and 100
steps still give the best held-out overlap (0.579, against 0.579 at LAM 0 and 0.575 at 3e-6).

Usage:
    python tokenlearn.py TABLE CORPUS_JSONL TARGETS_DIR OUT.safetensors
    python tokenlearn.py --val TABLE CORPUS_JSONL TARGETS_DIR [LAM ...]
TABLE is distill.py's output; TARGETS_DIR targets.py's. The tokenizer is the shipped one
(../tokenizer.json). About 30 seconds on one core (--val: about 40 seconds per LAM).
"""
import os
import sys
import time

import numpy as np
import scipy.sparse as sp
from safetensors.numpy import load_file, save_file
from tokenizers import Tokenizer

from corpus_text import TEXTS, doc_text, load_docs

LAM, STEPS, LR = 3e-7, 100, 0.02
SIF_A = 1e-3  # as TokenWeights::sif (embed/src/model.rs)
RIDGE = 0.3
DIMS = 256
TOKENIZER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tokenizer.json")


def count_matrix(tok, texts):
    """Token counts (texts x vocabulary), WordPiece without special tokens."""
    rows, cols = [], []
    for i, e in enumerate(tok.encode_batch(list(texts), add_special_tokens=False)):
        rows += [i] * len(e.ids)
        cols += e.ids
    shape = (len(texts), tok.get_vocab_size())
    return sp.csr_matrix((np.ones(len(rows), np.float32), (rows, cols)), shape=shape)


def sif_weights(doc_counts):
    """a / (a + p(t)), p the add-one smoothed frequency of t in the documents, as the index does."""
    cnt = 1 + np.asarray(doc_counts.sum(0), np.float64).ravel()
    return (SIF_A / (SIF_A + cnt / cnt.sum())).astype(np.float32)


def embed(counts, table):
    x = np.asarray(counts @ table)
    return x / np.maximum(np.linalg.norm(x, axis=1, keepdims=True), 1e-12)


def train(tok, table_w, docs, targets, idx, lam, steps, report=None):
    """Learns U from the documents idx; table_w is the distilled table times the SIF weights.
    report(U, step, train_cos), if given, is called every 25 steps."""
    x = embed(count_matrix(tok, [doc_text(docs[i]) for i in idx]), table_w)
    y = targets["docs"][idx]
    m = np.linalg.solve(x.T @ x + RIDGE * np.eye(x.shape[1]), x.T @ y).astype(np.float32)
    u = table_w @ m
    c = count_matrix(tok, [text(docs[i]) for text in TEXTS.values() for i in idx])
    y = np.vstack([targets[k][idx] for k in TEXTS]).astype(np.float32)
    used = np.unique(c.indices)  # only these rows get a gradient
    c = c[:, used].tocsr()
    ct = c.T.tocsr()
    p0 = u[used].copy()
    p = p0.copy()
    m1, m2, b1, b2 = np.zeros_like(p), np.zeros_like(p), 0.9, 0.999
    scale = np.sqrt((p0 ** 2).mean())
    for s in range(1, steps + 1):
        x = np.asarray(c @ p)
        r = np.maximum(np.linalg.norm(x, axis=1, keepdims=True), 1e-12)
        xh = x / r
        cos = (xh * y).sum(1, keepdims=True)
        g = np.asarray(ct @ (-(y - cos * xh) / r / len(y))) + 2 * lam * (p - p0)
        m1 = b1 * m1 + (1 - b1) * g
        m2 = b2 * m2 + (1 - b2) * g * g
        p -= LR * scale * (m1 / (1 - b1 ** s)) / (np.sqrt(m2 / (1 - b2 ** s)) + 1e-8)
        if report and s % 25 == 0:
            u[used] = p
            report(u, s, float(cos.mean()))
    u[used] = p
    return u


def validate(tok, table_w, docs, targets, lams, steps=2 * STEPS):
    """Trains on 80 % of the documents and reports on the other 20 % (never on questions)."""
    perm = np.random.default_rng(0).permutation(len(docs))
    va, tr = np.sort(perm[:len(docs) // 5]), np.sort(perm[len(docs) // 5:])
    all_docs = count_matrix(tok, [doc_text(d) for d in docs])
    held = {k: count_matrix(tok, [text(docs[i]) for i in va]) for k, text in TEXTS.items()}
    teacher_top = np.argsort(-(targets["sentences"][va] @ targets["docs"].T), 1)[:, :10]

    def report(u, step, train_cos):
        cos = {k: (embed(held[k], u) * targets[k][va]).sum(1).mean() for k in TEXTS}
        top = np.argsort(-(embed(held["sentences"], u) @ embed(all_docs, u).T), 1)[:, :10]
        overlap = np.mean([len(set(a) & set(b)) / 10 for a, b in zip(top, teacher_top)])
        print(f"  step {step:3d}: train cos {train_cos:.4f}, held-out cos "
              + ", ".join(f"{k} {v:.4f}" for k, v in cos.items())
              + f", sentence->doc top-10 overlap with the teacher {overlap:.4f}", flush=True)

    for lam in lams:
        print(f"LAM {lam}", flush=True)
        train(tok, table_w, docs, targets, tr, lam, steps, report)


def main(args):
    val = args[:1] == ["--val"]
    args = args[1:] if val else args
    if len(args) < 3 or (not val and len(args) != 4):
        sys.exit(__doc__)
    table, corpus, targets_dir = args[:3]
    tok = Tokenizer.from_file(TOKENIZER)
    tok.no_padding()  # tokenizer.json pads and truncates to 128 tokens
    tok.no_truncation()
    docs = load_docs(corpus)
    targets = {k: np.load(os.path.join(targets_dir, f"{k}.npy")) for k in TEXTS}
    w = sif_weights(count_matrix(tok, [doc_text(d) for d in docs]))
    table_w = load_file(table)["embeddings"].astype(np.float32) * w[:, None]
    if val:
        validate(tok, table_w, docs, targets, [float(x) for x in args[3:]] or [0, LAM, 1e-5])
        return
    t0 = time.time()
    u = train(tok, table_w, docs, targets, np.arange(len(docs)), LAM, STEPS)
    _, s, vt = np.linalg.svd(targets["docs"].astype(np.float64), full_matrices=False)
    e = (u @ vt[:DIMS].T.astype(np.float32)) / w[:, None]
    save_file({"embeddings": e.astype(np.float16)}, args[3])
    print(f"wrote {args[3]} in {time.time() - t0:.0f}s (the top {DIMS} directions keep "
          f"{(s[:DIMS] ** 2).sum() / (s ** 2).sum():.4f} of the targets' energy)")


if __name__ == "__main__":
    main(sys.argv[1:])
