"""Numpy forward pass of sentence-transformers/all-MiniLM-L6-v2 (BERT, mean pooling, L2 norm).

BERT as in the original: 6 post-norm layers, 384 wide, 12 heads, 1536-wide GELU (erf) feed-forward,
LayerNorm eps 1e-12, absolute learned positions from 0, token type 0 everywhere. WordPiece,
uncased, read by `tokenizers` from the folder's tokenizer.json (its built-in truncation to 128
and padding to 128 are switched off: sentence-transformers truncates at max_seq_length, 256).

Usage:
    from minilm_np import MiniLM
    m = MiniLM("path/to/all-MiniLM-L6-v2")   # model.safetensors + tokenizer.json
    v = m.embed(["parse command line arguments"])  # (n, 384) float32, L2-normalised
"""
import os

import numpy as np
from safetensors.numpy import load_file
from tokenizers import Tokenizer

PAD = 0  # [PAD]
EPS = 1e-12


_S = np.float32(0.7071067811865476)
_P, _A1, _A2, _A3, _A4, _A5 = (np.float32(c) for c in (
    0.3275911, 0.254829592, -0.284496736, 1.421413741, -1.453152027, 1.061405429))


def _gelu_rows(x):
    """GELU(x) = x * Phi(x) = x * (1 + erf(x / sqrt2)) / 2, in place. erf by Abramowitz & Stegun
    7.1.26 (|err| < 1.5e-7, as mpnet_np), written as erfc(|z|) = poly(t) * exp(-z^2)."""
    a = np.abs(x)
    a *= _S                                     # z = |x| / sqrt2
    t = a * _P
    t += 1
    np.reciprocal(t, out=t)                     # t = 1 / (1 + p z)
    y = t * _A5
    for c in (_A4, _A3, _A2, _A1):
        y += c
        y *= t
    np.square(a, out=a)
    np.negative(a, out=a)
    np.exp(a, out=a)
    y *= a                                      # erfc(z)
    y *= x
    y *= 0.5                                    # h = x erfc(z) / 2
    neg = x < 0
    np.subtract(x, y, out=x)                    # x >= 0: x (1 - erfc(z) / 2)
    np.copyto(x, y, where=neg)                  # x < 0:  x erfc(z) / 2
    return x


def gelu(x, rows=32):
    """In-place GELU over a 2-D array, a few rows at a time so the temporaries stay in cache
    (2.5 times faster than whole-array numpy expressions)."""
    for i in range(0, x.shape[0], rows):
        _gelu_rows(x[i:i + rows])
    return x


def layer_norm(x, w, b, eps=EPS):
    mu = x.mean(-1, keepdims=True)
    d = x - mu
    var = (d * d).mean(-1, keepdims=True)
    d *= 1.0 / np.sqrt(var + eps)
    d *= w
    d += b
    return d


class MiniLM:
    hidden, n_heads, n_layers = 384, 12, 6
    max_seq_length = 256  # sentence_bert_config.json

    def __init__(self, folder):
        w = {k.removeprefix("bert."): v for k, v in load_file(os.path.join(folder, "model.safetensors")).items()}
        self.w = {k: v.astype(np.float32) for k, v in w.items() if v.dtype.kind == "f"}
        self.tok = Tokenizer.from_file(os.path.join(folder, "tokenizer.json"))
        self.tok.no_padding()
        self.tok.no_truncation()
        e = "embeddings."
        # token type 0 everywhere: fold its row into the position table
        self.word = self.w[e + "word_embeddings.weight"]
        self.pos = self.w[e + "position_embeddings.weight"] + self.w[e + "token_type_embeddings.weight"][0]
        self.layers = []
        for i in range(self.n_layers):
            p = f"encoder.layer.{i}."
            lin = lambda n: (np.ascontiguousarray(self.w[p + n + ".weight"].T), self.w[p + n + ".bias"])
            q, k, v = (lin("attention.self." + n) for n in ("query", "key", "value"))
            self.layers.append(dict(
                qkv=(np.ascontiguousarray(np.concatenate([q[0], k[0], v[0]], 1)), np.concatenate([q[1], k[1], v[1]])),
                o=lin("attention.output.dense"),
                ln1=(self.w[p + "attention.output.LayerNorm.weight"], self.w[p + "attention.output.LayerNorm.bias"]),
                up=lin("intermediate.dense"),
                down=lin("output.dense"),
                ln2=(self.w[p + "output.LayerNorm.weight"], self.w[p + "output.LayerNorm.bias"]),
            ))

    def tokenize(self, texts, max_len=max_seq_length):
        """Token ids with [CLS] ... [SEP], cut to max_len keeping the final [SEP] (as the
        tokenizer's own truncation does)."""
        seqs = []
        for e in self.tok.encode_batch(list(texts)):
            ids = e.ids
            if len(ids) > max_len:
                ids = ids[:max_len - 1] + [ids[-1]]
            seqs.append(ids)
        return seqs

    def forward_ids(self, ids, mask):
        """ids, mask: int arrays (B, T). Returns token hidden states (B, T, H)."""
        B, T = ids.shape
        H, nh = self.hidden, self.n_heads
        dh = H // nh
        x = self.word[ids] + self.pos[:T]
        x = layer_norm(x, self.w["embeddings.LayerNorm.weight"], self.w["embeddings.LayerNorm.bias"])
        x = x.reshape(B * T, H)
        bias = ((1.0 - mask.astype(np.float32)) * np.float32(-1e9))[:, None, None, :]  # B,1,1,T
        scale = np.float32(1.0 / np.sqrt(dh))
        for L in self.layers:
            qkv = x @ L["qkv"][0]
            qkv += L["qkv"][1]
            qkv = qkv.reshape(B, T, 3, nh, dh)
            q = qkv[:, :, 0].transpose(0, 2, 1, 3)
            k = qkv[:, :, 1].transpose(0, 2, 3, 1)
            v = qkv[:, :, 2].transpose(0, 2, 1, 3)
            s = q @ k
            s *= scale
            s += bias
            s -= s.max(-1, keepdims=True)
            np.exp(s, out=s)
            s /= s.sum(-1, keepdims=True)
            ctx = (s @ v).transpose(0, 2, 1, 3).reshape(B * T, H)
            a = ctx @ L["o"][0]
            a += L["o"][1]
            a += x
            x = layer_norm(a, *L["ln1"])
            h = x @ L["up"][0]
            h += L["up"][1]
            h = gelu(h)
            d = h @ L["down"][0]
            d += L["down"][1]
            d += x
            x = layer_norm(d, *L["ln2"])
        return x.reshape(B, T, H)

    @staticmethod
    def mean_pool(x, mask, normalize=True):
        m = mask.astype(np.float32)[..., None]
        v = (x * m).sum(1) / np.maximum(m.sum(1), 1e-9)
        if normalize:
            v = v / np.maximum(np.linalg.norm(v, axis=-1, keepdims=True), 1e-12)
        return v

    def embed_ids(self, seqs, batch_size=32):
        """Embeds token-id lists: sorted by length into batches padded to their longest."""
        out = np.zeros((len(seqs), self.hidden), np.float32)
        order = np.argsort([len(s) for s in seqs], kind="stable")
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

    def embed(self, texts, max_len=max_seq_length, batch_size=32):
        return self.embed_ids(self.tokenize(texts, max_len), batch_size)


if __name__ == "__main__":
    import sys
    m = MiniLM(sys.argv[1] if len(sys.argv) > 1 else "target/embed-bench/minilm")
    v = m.embed(["This is an example sentence", "Each sentence is converted"])
    print("example:", np.round(v[0, :5], 4), "...")
    v = m.embed(["How do I parse command line arguments?",
                 "argparse — Parser for command-line options, arguments and sub-commands",
                 "Serialize an object to a JSON formatted string."])
    print("cosines: related %.3f, unrelated %.3f" % (v[0] @ v[1], v[0] @ v[2]))
