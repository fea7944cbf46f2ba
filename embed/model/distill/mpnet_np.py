"""Numpy forward pass of sentence-transformers/all-mpnet-base-v2 (MPNet, mean pooling, L2 norm).

MPNet is BERT-shaped (12 post-norm layers, 768 wide, 12 heads, GELU) with two differences that
matter here: no token types, and a learned relative-position bias added to every attention score
(32 buckets shared by all layers: exact up to 8 tokens apart, logarithmic to 128, signed);
absolute positions start at the padding id + 1, as in RoBERTa.

Usage:
    from mpnet_np import MPNet
    m = MPNet("path/to/all-mpnet-base-v2")
    v = m.embed(["parse command line arguments"])  # (n, 768) float32, L2-normalised
"""
import math
import os

import numpy as np
from safetensors.numpy import load_file
from tokenizers import Tokenizer

PAD = 1  # MPNet's <pad> id, also its position-id offset


def _erf(x):
    # Abramowitz & Stegun 7.1.26, |err| < 1.5e-7
    s = np.sign(x)
    a = np.abs(x)
    t = 1.0 / (1.0 + 0.3275911 * a)
    y = 1.0 - (((((1.061405429 * t - 1.453152027) * t) + 1.421413741) * t - 0.284496736) * t + 0.254829592) * t * np.exp(-a * a)
    return s * y


def gelu(x):
    return 0.5 * x * (1.0 + _erf(x * np.float32(0.7071067811865476)))


def layer_norm(x, w, b, eps=1e-5):
    mu = x.mean(-1, keepdims=True)
    var = ((x - mu) ** 2).mean(-1, keepdims=True)
    return (x - mu) / np.sqrt(var + eps) * w + b


def relative_bucket(relative, buckets=32, max_distance=128):
    """The bucket of each key-minus-query distance: half the buckets per direction, the first
    half of those exact, the rest logarithmic up to max_distance."""
    n = -relative
    half = buckets // 2
    out = (n < 0).astype(np.int64) * half
    n = np.abs(n)
    exact = half // 2
    far = exact + (np.log(np.maximum(n, 1) / exact) / math.log(max_distance / exact) * (half - exact)).astype(np.int64)
    return out + np.where(n < exact, n, np.minimum(far, half - 1))


class MPNet:
    hidden, n_heads, n_layers = 768, 12, 12

    def __init__(self, folder):
        self.w = {k: v.astype(np.float32) for k, v in load_file(os.path.join(folder, "model.safetensors")).items()}
        self.tok = Tokenizer.from_file(os.path.join(folder, "tokenizer.json"))
        self.tok.no_padding()
        self.tok.no_truncation()
        # pre-transpose linear weights ([out,in] -> [in,out])
        self.lin = {}
        for i in range(self.n_layers):
            p = f"encoder.layer.{i}."
            for name in ["attention.attn.q", "attention.attn.k", "attention.attn.v", "attention.attn.o",
                         "intermediate.dense", "output.dense"]:
                self.lin[p + name] = (np.ascontiguousarray(self.w[p + name + ".weight"].T), self.w[p + name + ".bias"])

    def _linear(self, x, name):
        W, b = self.lin[name]
        return x @ W + b

    def forward_ids(self, ids, mask):
        """ids, mask: int arrays (B, T). Returns token hidden states (B, T, H)."""
        w = self.w
        B, T = ids.shape
        H, nh = self.hidden, self.n_heads
        dh = H // nh
        positions = np.cumsum(mask, 1) * mask + PAD
        x = w["embeddings.word_embeddings.weight"][ids] + w["embeddings.position_embeddings.weight"][positions]
        x = layer_norm(x, w["embeddings.LayerNorm.weight"], w["embeddings.LayerNorm.bias"])
        relative = np.arange(T)[None, :] - np.arange(T)[:, None]
        position_bias = w["encoder.relative_attention_bias.weight"][relative_bucket(relative)].transpose(2, 0, 1)[None]
        bias = ((1.0 - mask.astype(np.float32)) * np.float32(-1e9))[:, None, None, :] + position_bias  # B,nh,T,T
        scale = np.float32(1.0 / np.sqrt(dh))
        for i in range(self.n_layers):
            p = f"encoder.layer.{i}."
            q = self._linear(x, p + "attention.attn.q").reshape(B, T, nh, dh).transpose(0, 2, 1, 3)
            k = self._linear(x, p + "attention.attn.k").reshape(B, T, nh, dh).transpose(0, 2, 3, 1)
            v = self._linear(x, p + "attention.attn.v").reshape(B, T, nh, dh).transpose(0, 2, 1, 3)
            s = (q @ k) * scale + bias
            s = s - s.max(-1, keepdims=True)
            e = np.exp(s)
            a = e / e.sum(-1, keepdims=True)
            ctx = (a @ v).transpose(0, 2, 1, 3).reshape(B, T, H)
            x = layer_norm(self._linear(ctx, p + "attention.attn.o") + x,
                           w[p + "attention.LayerNorm.weight"], w[p + "attention.LayerNorm.bias"])
            h = gelu(self._linear(x, p + "intermediate.dense"))
            x = layer_norm(self._linear(h, p + "output.dense") + x,
                           w[p + "output.LayerNorm.weight"], w[p + "output.LayerNorm.bias"])
        return x

    @staticmethod
    def mean_pool(x, mask, normalize=True):
        m = mask.astype(np.float32)[..., None]
        v = (x * m).sum(1) / np.maximum(m.sum(1), 1e-9)
        if normalize:
            v = v / np.maximum(np.linalg.norm(v, axis=-1, keepdims=True), 1e-12)
        return v

    def embed(self, texts, max_len=256, batch_size=16):
        encs = self.tok.encode_batch(list(texts))
        seqs = []
        for e in encs:
            ids = e.ids
            if len(ids) > max_len:
                ids = ids[:max_len - 1] + [ids[-1]]  # keep </s>
            seqs.append(ids)
        out = np.zeros((len(seqs), self.hidden), np.float32)
        order = np.argsort([len(s) for s in seqs])  # length-bucketing
        for st in range(0, len(order), batch_size):
            idx = order[st:st + batch_size]
            T = max(len(seqs[j]) for j in idx)
            ids = np.full((len(idx), T), PAD, np.int64)
            mask = np.zeros((len(idx), T), np.int64)
            for r, j in enumerate(idx):
                ids[r, :len(seqs[j])] = seqs[j]
                mask[r, :len(seqs[j])] = 1
            out[idx] = self.mean_pool(self.forward_ids(ids, mask), mask)
        return out


if __name__ == "__main__":
    import sys
    m = MPNet(sys.argv[1] if len(sys.argv) > 1 else "target/embedding-build/mpnet")
    v = m.embed(["How do I delete a folder that still has files in it?", "Recursively delete a directory tree.",
                 "Serialize an object to a JSON formatted string."])
    print("cosines: related %.3f, unrelated %.3f" % (v[0] @ v[1], v[0] @ v[2]))
