#!/usr/bin/env python3
"""A local OpenAI-compatible embeddings server, for turnstile's tests.

    python3 tests/upstream/embeddings.py --port 0 [--dims 64] [--delay-ms 0] [--exit-with-stdin]

prints one line, `listening on http://127.0.0.1:PORT`, then serves until SIGTERM (or, with
`--exit-with-stdin`, until its standard input closes). Python 3.11 standard library only;
loopback only.

`POST /v1/embeddings` takes OpenAI's request (`model`, `input`: a string or a list of strings,
optional `encoding_format: "float"` and `dimensions`) and answers OpenAI's shape (`data[i].index`,
`data[i].embedding`, `model`, `usage`). The vectors are *deterministic* and mean something: each
lowercase word of the text adds +1 or -1 to one dimension chosen by its hash (the hashing trick),
so texts that share words are near each other, and the same text always gets the same vector —
not normalised (turnstile normalises). `dimensions` (when given) replaces --dims for the request.
The data comes back in reverse order (each item names its `index`), as a server may send it.

What a test controls, through `POST /control` with a JSON object (every key optional, the others
kept):
- `fail_next`: the next N embeddings requests are answered `fail_status` (default 503) with
  `Retry-After: retry_after` (default 0, seconds; a negative value sends none) and an OpenAI
  error body;
- `fail_status`, `retry_after`: as above;
- `fail_always`: true: every request fails so (an outage), until set false;
- `fail_after_requests`: N: once N requests were answered 200 (since the last reset), every
  request fails so (an outage in the middle of a build); null: never;
- `delay_ms`: each embeddings request waits this long before answering;
- `require_key`: a request whose `Authorization` is not `Bearer KEY` is answered 401 (null: none).

`GET /stats` answers `{"requests", "texts", "failed", "texts_seen": {text: times}, "max_batch",
"authorized"}` (requests answered 200, texts embedded in them, requests failed, and how often
each text was embedded); `POST /stats/reset` zeroes them.
"""
import argparse
import hashlib
import json
import re
import socket
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

WORD = re.compile(r"[a-z0-9_]+")

lock = threading.Lock()
control = {
    "fail_next": 0,
    "fail_status": 503,
    "retry_after": 0,
    "fail_always": False,
    "fail_after_requests": None,
    "delay_ms": 0,
    "require_key": None,
}
stats = {}


def reset_stats():
    stats.update(requests=0, texts=0, failed=0, texts_seen={}, max_batch=0, authorized=0)


reset_stats()


def vector(text, dims):
    v = [0.0] * dims
    for word in WORD.findall(text.lower()):
        h = hashlib.sha256(word.encode()).digest()
        i = int.from_bytes(h[:4], "little") % dims
        v[i] += 1.0 if h[4] & 1 else -1.0
    return v


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def setup(self):
        super().setup()
        # Headers and body go as separate writes: without this, Nagle's algorithm holds the body
        # until the client's delayed ACK (40 ms), which a latency benchmark would measure.
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def log_message(self, fmt, *args):
        sys.stderr.write("%s\n" % (fmt % args))

    def send_json(self, status, body, headers=()):
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for name, value in headers:
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data)

    def read_body(self):
        length = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(length) if length else b""

    def do_GET(self):
        if self.path == "/stats":
            with lock:
                self.send_json(200, stats)
        else:
            self.send_json(404, {"error": {"message": "not found", "type": "invalid_request_error"}})

    def do_POST(self):
        body = self.read_body()
        if self.path == "/stats/reset":
            with lock:
                reset_stats()
            self.send_json(200, {})
            return
        if self.path == "/control":
            with lock:
                control.update(json.loads(body or b"{}"))
                self.send_json(200, control)
            return
        if self.path != "/v1/embeddings":
            self.send_json(404, {"error": {"message": "not found", "type": "invalid_request_error"}})
            return
        with lock:
            delay = control["delay_ms"]
            key = control["require_key"]
        if delay:
            time.sleep(delay / 1000)
        if key is not None and self.headers.get("Authorization") != f"Bearer {key}":
            with lock:
                stats["failed"] += 1
            self.send_json(401, {"error": {"message": "Incorrect API key provided", "type": "invalid_request_error", "code": "invalid_api_key"}})
            return
        with lock:
            after = control["fail_after_requests"]
            failing = (
                control["fail_always"]
                or control["fail_next"] > 0
                or (after is not None and stats["requests"] >= after)
            )
            if failing:
                control["fail_next"] = max(0, control["fail_next"] - 1)
                stats["failed"] += 1
                status, retry = control["fail_status"], control["retry_after"]
        if failing:
            headers = [("Retry-After", str(retry))] if retry >= 0 else []
            self.send_json(status, {"error": {"message": "the model is overloaded", "type": "server_error"}}, headers)
            return
        try:
            request = json.loads(body)
            texts = request["input"]
            if isinstance(texts, str):
                texts = [texts]
            assert isinstance(texts, list) and all(isinstance(t, str) for t in texts)
            assert request.get("encoding_format", "float") == "float"
            dims = int(request.get("dimensions") or args.dims)
        except (ValueError, KeyError, AssertionError, TypeError):
            self.send_json(400, {"error": {"message": "bad request", "type": "invalid_request_error"}})
            return
        data = [{"object": "embedding", "index": i, "embedding": vector(t, dims)} for i, t in enumerate(texts)]
        data.reverse()
        words = sum(len(t.split()) for t in texts)
        with lock:
            stats["requests"] += 1
            stats["texts"] += len(texts)
            stats["max_batch"] = max(stats["max_batch"], len(texts))
            if self.headers.get("Authorization"):
                stats["authorized"] += 1
            for t in texts:
                stats["texts_seen"][t] = stats["texts_seen"].get(t, 0) + 1
        self.send_json(200, {"object": "list", "data": data, "model": request.get("model"), "usage": {"prompt_tokens": words, "total_tokens": words}})


def main():
    global args
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--dims", type=int, default=64)
    parser.add_argument("--delay-ms", type=int, default=0)
    parser.add_argument("--exit-with-stdin", action="store_true")
    args = parser.parse_args()
    control["delay_ms"] = args.delay_ms
    server = ThreadingHTTPServer(("127.0.0.1", args.port), Handler)
    server.daemon_threads = True
    print(f"listening on http://127.0.0.1:{server.server_address[1]}", flush=True)
    if args.exit_with_stdin:
        def watch():
            sys.stdin.read()
            server.shutdown()
        threading.Thread(target=watch, daemon=True).start()
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    main()
