"""Numpy forward pass of sentence-transformers/all-MiniLM-L6-v2 (BERT, mean pooling, L2 norm).

Usage:
    from minilm_np import MiniLM
    m = MiniLM("path/to/minilm")
    v = m.embed(["parse command line arguments"])  # (n, 384) float32, L2-normalised
"""
import os
import numpy as np
from safetensors.numpy import load_file
from tokenizers import Tokenizer

HERE = os.path.dirname(os.path.abspath(__file__))


def _erf(x):
    # Abramowitz & Stegun 7.1.26, |err| < 1.5e-7
    s = np.sign(x)
    a = np.abs(x)
    t = 1.0 / (1.0 + 0.3275911 * a)
    y = 1.0 - (((((1.061405429 * t - 1.453152027) * t) + 1.421413741) * t - 0.284496736) * t + 0.254829592) * t * np.exp(-a * a)
    return s * y


def gelu(x):
    return 0.5 * x * (1.0 + _erf(x * np.float32(0.7071067811865476)))


def layer_norm(x, w, b, eps=1e-12):
    mu = x.mean(-1, keepdims=True)
    var = ((x - mu) ** 2).mean(-1, keepdims=True)
    return (x - mu) / np.sqrt(var + eps) * w + b


class MiniLM:
    def __init__(self, folder=os.path.join(HERE, "minilm")):
        self.w = {k: v.astype(np.float32) for k, v in load_file(os.path.join(folder, "model.safetensors")).items()}
        # strip optional "bert." prefix
        self.w = {(k[5:] if k.startswith("bert.") else k): v for k, v in self.w.items()}
        self.tok = Tokenizer.from_file(os.path.join(folder, "tokenizer.json"))
        self.tok.no_padding()
        self.tok.no_truncation()
        self.n_layers = 6
        self.n_heads = 12
        self.hidden = 384
        # pre-transpose linear weights ([out,in] -> [in,out])
        self.lin = {}
        for i in range(self.n_layers):
            p = f"encoder.layer.{i}."
            for name in ["attention.self.query", "attention.self.key", "attention.self.value",
                         "attention.output.dense", "intermediate.dense", "output.dense"]:
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
        x = w["embeddings.word_embeddings.weight"][ids] + w["embeddings.position_embeddings.weight"][:T][None] \
            + w["embeddings.token_type_embeddings.weight"][0][None, None]
        x = layer_norm(x, w["embeddings.LayerNorm.weight"], w["embeddings.LayerNorm.bias"])
        bias = ((1.0 - mask.astype(np.float32)) * np.float32(-1e9))[:, None, None, :]  # B,1,1,T
        scale = np.float32(1.0 / np.sqrt(dh))
        for i in range(self.n_layers):
            p = f"encoder.layer.{i}."
            q = self._linear(x, p + "attention.self.query").reshape(B, T, nh, dh).transpose(0, 2, 1, 3)
            k = self._linear(x, p + "attention.self.key").reshape(B, T, nh, dh).transpose(0, 2, 3, 1)
            v = self._linear(x, p + "attention.self.value").reshape(B, T, nh, dh).transpose(0, 2, 1, 3)
            s = (q @ k) * scale + bias
            s = s - s.max(-1, keepdims=True)
            e = np.exp(s)
            a = e / e.sum(-1, keepdims=True)
            ctx = (a @ v).transpose(0, 2, 1, 3).reshape(B, T, H)
            x = layer_norm(self._linear(ctx, p + "attention.output.dense") + x,
                           w[p + "attention.output.LayerNorm.weight"], w[p + "attention.output.LayerNorm.bias"])
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
                ids = ids[:max_len - 1] + [ids[-1]]  # keep [SEP]
            seqs.append(ids)
        out = np.zeros((len(seqs), self.hidden), np.float32)
        order = np.argsort([len(s) for s in seqs])  # length-bucketing
        for st in range(0, len(order), batch_size):
            idx = order[st:st + batch_size]
            T = max(len(seqs[j]) for j in idx)
            ids = np.zeros((len(idx), T), np.int64)
            mask = np.zeros((len(idx), T), np.int64)
            for r, j in enumerate(idx):
                ids[r, :len(seqs[j])] = seqs[j]
                mask[r, :len(seqs[j])] = 1
            out[idx] = self.mean_pool(self.forward_ids(ids, mask), mask)
        return out


if __name__ == "__main__":
    import sys
    m = MiniLM(sys.argv[1] if len(sys.argv) > 1 else os.path.join(HERE, "minilm"))
    v = m.embed(["parse command line arguments"])[0]
    print(v[:8])
    ref = np.array([0.01546, 0.02402, -0.04897, 0.02342])
    print("max abs diff vs ref (first 4):", np.abs(v[:4] - ref).max())
