#!/usr/bin/env python3
"""An OpenAI-compatible embeddings server for benchmarks: a real sentence-transformers model
(all-MiniLM-L6-v2 or all-mpnet-base-v2) run by numpy on the CPU.

    POST /v1/embeddings  {"model": NAME, "input": str | [str], "encoding_format": "float"|"base64",
                          "dimensions": N}
    GET  /v1/models, /v1/models/NAME, /health

Vectors are mean-pooled over the attention mask and L2-normalised float32, as
sentence-transformers computes them for these models; inputs are cut at --max-tokens (default
the model's max_seq_length: 256 for MiniLM, 384 for MPNet). The inputs of one request are sorted
by length and run in sub-batches (--sub-batch, default 32) padded to their longest.

    python3 bench/embeddings/server.py --kind minilm --model-dir target/embed-bench/minilm \
        --name all-MiniLM-L6-v2 --port 0

prints `listening on http://127.0.0.1:PORT` on stdout once the model is loaded and warm.
Requests are served by a thread each; the forward passes run one at a time by default
(--concurrency), each with all of numpy's BLAS threads.
"""
import argparse
import base64
import json
import os
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(ROOT, "embed", "model", "distill"))

MAX_INPUTS = 2048  # OpenAI's limit on inputs per request
MAX_BODY = 64 << 20

KINDS = {
    # kind: (module, class, max_seq_length, default name)
    "minilm": ("minilm_np", "MiniLM", 256, "all-MiniLM-L6-v2"),
    "mpnet": ("mpnet_np", "MPNet", 384, "all-mpnet-base-v2"),
}


class Encoder:
    """Tokenises, truncates, batches and pools around a numpy model with forward_ids/mean_pool."""

    def __init__(self, kind, folder, max_tokens=None, sub_batch=32, batch_tokens=2048):
        module, cls, max_len, _ = KINDS[kind]
        mod = __import__(module)
        self.model = getattr(mod, cls)(folder)
        self.pad = mod.PAD
        self.dim = self.model.hidden
        self.max_tokens = max_tokens or max_len
        self.sub_batch = sub_batch
        self.batch_tokens = batch_tokens

    def tokenize(self, texts):
        seqs = []
        for e in self.model.tok.encode_batch(texts):
            ids = e.ids
            if len(ids) > self.max_tokens:
                ids = ids[:self.max_tokens - 1] + [ids[-1]]  # keep the closing [SEP] / </s>
            seqs.append(ids)
        return seqs

    def batches(self, lengths):
        """Index lists, sorted by length: at most sub_batch inputs and, past one input, at most
        batch_tokens padded tokens each (so a few long inputs don't pad many short ones)."""
        out, cur = [], []
        for j in np.argsort(lengths, kind="stable"):
            if cur and (len(cur) >= self.sub_batch or (len(cur) + 1) * lengths[j] > self.batch_tokens):
                out.append(cur)
                cur = []
            cur.append(j)
        if cur:
            out.append(cur)
        return out

    def embed_seqs(self, seqs):
        out = np.zeros((len(seqs), self.dim), np.float32)
        for idx in self.batches([len(s) for s in seqs]):
            T = max(len(seqs[j]) for j in idx)
            ids = np.full((len(idx), T), self.pad, np.int64)
            mask = np.zeros((len(idx), T), np.int64)
            for r, j in enumerate(idx):
                ids[r, :len(seqs[j])] = seqs[j]
                mask[r, :len(seqs[j])] = 1
            out[idx] = self.model.mean_pool(self.model.forward_ids(ids, mask), mask)
        return out


class ApiError(Exception):
    def __init__(self, status, message, param=None, code=None):
        super().__init__(message)
        self.status, self.message, self.param, self.code = status, message, param, code


def error_body(e):
    return {"error": {"message": e.message, "type": "invalid_request_error", "param": e.param, "code": e.code}}


def parse_request(body, name, dim):
    """Validates an embeddings request; returns (texts, base64?)."""
    try:
        req = json.loads(body)
    except (ValueError, UnicodeDecodeError):
        raise ApiError(400, "We could not parse the JSON body of your request.")
    if not isinstance(req, dict):
        raise ApiError(400, "The request body must be a JSON object.")
    model = req.get("model")
    if model is None:
        raise ApiError(400, "you must provide a model parameter", "model")
    if model != name:
        raise ApiError(404, f"The model `{model}` does not exist (this server serves `{name}`).", "model",
                       "model_not_found")
    inp = req.get("input")
    if isinstance(inp, str):
        texts = [inp]
    elif isinstance(inp, list) and inp and all(isinstance(t, str) for t in inp):
        texts = inp
    elif isinstance(inp, list) and inp and all(isinstance(t, (int, list)) for t in inp):
        raise ApiError(400, "Token-array inputs are not supported by this server; send strings.", "input")
    elif inp is None:
        raise ApiError(400, "Missing required parameter: 'input'.", "input")
    else:
        raise ApiError(400, "'input' must be a string or a non-empty array of strings.", "input")
    if len(texts) > MAX_INPUTS:
        raise ApiError(400, f"'input' has {len(texts)} items; at most {MAX_INPUTS} are allowed.", "input")
    fmt = req.get("encoding_format") or "float"
    if fmt not in ("float", "base64"):
        raise ApiError(400, f"'encoding_format' must be 'float' or 'base64', not {fmt!r}.", "encoding_format")
    dims = req.get("dimensions")
    if dims is not None and (isinstance(dims, bool) or not isinstance(dims, int) or dims != dim):
        raise ApiError(400, f"This model only supports 'dimensions' = {dim}; got {dims!r}.", "dimensions")
    return texts, fmt == "base64"


def render(vectors, name, tokens, b64):
    """The response body. Floats are written with 9 significant digits, which round-trip float32."""
    parts = []
    for i, row in enumerate(vectors):
        if b64:
            emb = '"' + base64.b64encode(row.astype("<f4").tobytes()).decode() + '"'
        else:
            emb = "[" + ",".join(map("%.9g".__mod__, row.tolist())) + "]"
        parts.append('{"object":"embedding","index":%d,"embedding":%s}' % (i, emb))
    return ('{"object":"list","data":[%s],"model":%s,"usage":{"prompt_tokens":%d,"total_tokens":%d}}'
            % (",".join(parts), json.dumps(name), tokens, tokens)).encode()


def make_handler(enc, name, gate, quiet):
    models = {"object": "list", "data": [{"id": name, "object": "model", "created": 0, "owned_by": "sentence-transformers"}]}

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        disable_nagle_algorithm = True
        server_version = "embed-bench"

        def log_message(self, *args):
            pass

        def reply(self, status, body, started, note=""):
            if isinstance(body, dict):
                body = json.dumps(body).encode()
            head = (f"HTTP/1.1 {status} {self.responses.get(status, ('',))[0]}\r\n"
                    "Content-Type: application/json\r\n"
                    f"Content-Length: {len(body)}\r\n"
                    + ("Connection: close\r\n" if self.close_connection else "")
                    + "\r\n").encode()
            self.wfile.write(head + body)
            if not quiet:
                ms = (time.perf_counter() - started) * 1e3
                sys.stderr.write(f"{self.command} {self.path} {status} {note}{ms:.1f}ms\n")

        def do_GET(self):
            t0 = time.perf_counter()
            path = self.path.split("?")[0].rstrip("/")
            if path == "/health":
                self.reply(200, {"status": "ok", "model": name}, t0)
            elif path == "/v1/models":
                self.reply(200, models, t0)
            elif path == f"/v1/models/{name}":
                self.reply(200, models["data"][0], t0)
            elif path.startswith("/v1/models/"):
                self.reply(404, error_body(ApiError(404, f"The model `{path[11:]}` does not exist.", "model",
                                                    "model_not_found")), t0)
            else:
                self.reply(404, error_body(ApiError(404, f"Unknown path {path}")), t0)

        def do_POST(self):
            t0 = time.perf_counter()
            path = self.path.split("?")[0].rstrip("/")
            try:
                length = self.headers.get("Content-Length")
                if length is None or not length.isdigit():
                    self.close_connection = True
                    raise ApiError(411, "A Content-Length header is required.")
                length = int(length)
                if length > MAX_BODY:
                    self.close_connection = True
                    raise ApiError(413, f"Request body over {MAX_BODY} bytes.")
                body = self.rfile.read(length)
                if path not in ("/v1/embeddings", "/embeddings"):
                    raise ApiError(404, f"Unknown path {path}")
                texts, b64 = parse_request(body, name, enc.dim)
            except ApiError as e:
                self.reply(e.status, error_body(e), t0, f"{e.message!r} ")
                return
            seqs = enc.tokenize(texts)
            tokens = sum(map(len, seqs))
            try:
                with gate:
                    vectors = enc.embed_seqs(seqs)
                body = render(vectors, name, tokens, b64)
            except Exception as e:  # a bug, not the client's fault: say so and keep serving
                self.reply(500, {"error": {"message": f"{type(e).__name__}: {e}", "type": "server_error",
                                           "param": None, "code": None}}, t0)
                return
            self.reply(200, body, t0, f"n={len(texts)} tokens={tokens} ")

    return Handler


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model-dir", required=True, help="sentence-transformers folder (model.safetensors, tokenizer.json)")
    ap.add_argument("--kind", required=True, choices=sorted(KINDS))
    ap.add_argument("--name", help="model name served (default: all-MiniLM-L6-v2 / all-mpnet-base-v2)")
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, default=0, help="0 picks a free port")
    ap.add_argument("--max-tokens", type=int, help="truncate inputs (default 256 MiniLM, 384 MPNet)")
    ap.add_argument("--sub-batch", type=int, default=32, help="passages per forward pass")
    ap.add_argument("--concurrency", type=int, default=1, help="forward passes allowed at once")
    ap.add_argument("--quiet", action="store_true", help="no per-request log line on stderr")
    a = ap.parse_args()
    name = a.name or KINDS[a.kind][3]
    enc = Encoder(a.kind, a.model_dir, a.max_tokens, a.sub_batch)
    enc.embed_seqs(enc.tokenize(["warm up"]))
    gate = threading.BoundedSemaphore(a.concurrency)
    srv = ThreadingHTTPServer((a.host, a.port), make_handler(enc, name, gate, a.quiet))
    srv.daemon_threads = True
    host, port = srv.server_address[:2]
    print(f"listening on http://{host}:{port}", flush=True)
    if not a.quiet:
        sys.stderr.write(f"{name} ({a.kind}, {enc.dim} dims, max {enc.max_tokens} tokens) from {a.model_dir}\n")
    try:
        srv.serve_forever()
    except KeyboardInterrupt:
        pass
    srv.server_close()


if __name__ == "__main__":
    main()
