#!/usr/bin/env python3
"""A local OpenAI-compatible chat completions upstream, for turnstile's tests and benchmarks.

    python3 tests/upstream/upstream.py --port 0 --latency-ms 2000

prints one line, `listening on http://127.0.0.1:PORT`, then serves until SIGTERM (or SIGINT; with
`--exit-with-stdin`, also until its standard input closes). Python 3.11 standard library only;
loopback by default.

`POST /v1/chat/completions` behaves as the JSON body's `model` asks, so one upstream serves
every case:

- any model not named below: waits --latency-ms, then answers a chat completion whose content
  quotes the first source id of the prompt (the first `id: X` in its messages), e.g.
  "According to [json.dumps], ...", so a test can tell the answer came from the prompt;
- `stream`: with `"stream": true`, the same answer as server-sent events (`data: {...}` chunks,
  then `data: [DONE]`); without, a normal answer;
- `rate-limit`: 429 with `Retry-After: 7` and a JSON error body;
- `unavailable`: 503 with `Retry-After: 3` and a JSON error body;
- `hang`: reads the request, never answers, holds the connection until the client goes;
- `trickle`: 200 and its headers, then one byte of body a second, forever;
- `endless`: 200 and a chunked body that never ends, written as fast as it goes;
- `close`: 200 with `Content-Length: 1000`, 10 bytes, then the connection is closed;
- `garbage`: 200 with a body that is not JSON;
- `redirect-metadata`: 302 to `http://169.254.169.254/latest/meta-data/`;
- `by-question`: the behaviour named in the prompt as `upstream-mode:NAME` (one of the models
  above; none: normal) — so one client whose model is fixed (a plugin's setting) can meet every
  behaviour in turn, each question asking for one.

`GET /stats` answers what it has counted of those requests: `{"requests": N, "in_flight": K,
"max_in_flight": M, "by_model": {...}, "authorization_seen": true|false}` (whether any request
had an `Authorization` header, never its value); `POST /stats/reset` zeroes it. Each request is
logged to stderr as one line: method, path, model, status. Headers are never logged.
"""

import argparse
import json
import re
import select
import signal
import socket
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

MAX_REQUEST_BYTES = 1 << 20
SOURCE_ID = re.compile(r"\bid:\s*(\S+)")
MODE = re.compile(r"\bupstream-mode:([a-z-]+)")
METADATA = "http://169.254.169.254/latest/meta-data/"
# Set when the server stops: every request still being served (hang, trickle, endless) ends.
STOPPING = threading.Event()


class Stats:
    """The completions requests seen: how many, how many at once, by model."""

    def __init__(self):
        self.lock = threading.Lock()
        self._zero()

    def _zero(self):
        self.requests = 0
        self.in_flight = 0
        self.max_in_flight = 0
        self.by_model = {}
        self.authorization_seen = False

    def reset(self):
        with self.lock:
            self._zero()

    def begin(self, model, authorized):
        with self.lock:
            self.requests += 1
            self.in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)
            self.by_model[model] = self.by_model.get(model, 0) + 1
            self.authorization_seen = self.authorization_seen or authorized

    def end(self):
        with self.lock:
            self.in_flight -= 1

    def snapshot(self):
        with self.lock:
            return {
                "requests": self.requests,
                "in_flight": self.in_flight,
                "max_in_flight": self.max_in_flight,
                "by_model": dict(self.by_model),
                "authorization_seen": self.authorization_seen,
            }


STATS = Stats()


def first_match(request, pattern):
    """The first group of `pattern` in the request's messages (text or text parts), or None."""
    for message in request.get("messages") or []:
        content = message.get("content") if isinstance(message, dict) else None
        texts = [content] if isinstance(content, str) else []
        if isinstance(content, list):
            texts = [p.get("text") for p in content if isinstance(p, dict)]
        for text in texts:
            found = pattern.search(text if isinstance(text, str) else "")
            if found:
                return found.group(1)
    return None


def answer_text(request, model):
    source = first_match(request, SOURCE_ID)
    if source is None:
        return "The prompt names no source, so there is nothing to answer from."
    return f"According to [{source}], the sources answer this question (local upstream, model {model})."


def completion(model, text):
    words = len(text.split())
    return {
        "id": f"chatcmpl-local-{time.monotonic_ns()}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": text},
                "finish_reason": "stop",
            }
        ],
        "usage": {"prompt_tokens": 0, "completion_tokens": words, "total_tokens": words},
    }


def error_body(message, kind):
    return {"error": {"message": message, "type": kind, "code": kind}}


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "turnstile-test-upstream/1"

    def version_string(self):
        return self.server_version
    # Whether the request being served is counted in flight.
    counted = False
    # The status sent for it, if any yet.
    status_sent = None

    # --- plumbing -------------------------------------------------------------------------

    def log_message(self, format, *args):
        # http.server's own lines (which could carry a path's query) are replaced by `log`.
        pass

    def send_response(self, code, message=None):
        self.status_sent = code
        super().send_response(code, message)

    def log(self, model, note=None):
        """One line per request: method, path, model, status (and what became of it)."""
        line = f"{self.command} {self.path} model={model} status={self.status_sent or '-'}"
        print(line + (f" ({note})" if note else ""), file=sys.stderr, flush=True)
        self.status_sent = None

    def send_whole(self, status, body, content_type="application/json", headers=()):
        """One complete response with a Content-Length (the connection stays usable)."""
        data = body if isinstance(body, bytes) else json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        for name, value in headers:
            self.send_header(name, value)
        self.end_headers()
        # The request is over once its answer is decided: counted out before the client can
        # see the answer (and send its next request), so `max_in_flight` never over-counts.
        self.done()
        self.wfile.write(data)
        self.wfile.flush()

    def client_gone(self, timeout):
        """Waits up to `timeout` seconds; True if the client closed its end (or the server stops)."""
        deadline = time.monotonic() + timeout
        while not STOPPING.is_set():
            left = deadline - time.monotonic()
            if left <= 0:
                return False
            readable, _, _ = select.select([self.connection], [], [], min(left, 0.2))
            if readable:
                try:
                    if not self.connection.recv(1, socket.MSG_PEEK):
                        return True
                except OSError:
                    return True
                # Bytes the client sent early: nothing to do with them now.
                time.sleep(min(left, 0.2))
        return True

    def done(self):
        """Counts this request out of `in_flight` (once)."""
        if self.counted:
            self.counted = False
            STATS.end()

    # --- routes ---------------------------------------------------------------------------

    def do_GET(self):
        if self.path == "/stats":
            self.send_whole(200, STATS.snapshot())
        else:
            self.send_whole(404, error_body("not found", "not_found"))
        self.log("-")

    def do_POST(self):
        length = self.headers.get("Content-Length")
        if self.path == "/stats/reset":
            self.read_body(length)
            STATS.reset()
            self.send_whole(200, STATS.snapshot())
            self.log("-")
            return
        if self.path.split("?")[0] != "/v1/chat/completions":
            self.read_body(length)
            self.send_whole(404, error_body("not found", "not_found"))
            self.log("-")
            return
        if length is None or not length.isdigit() or int(length) > MAX_REQUEST_BYTES:
            self.close_connection = True
            self.send_whole(411 if length is None else 413, error_body("bad length", "invalid_request_error"))
            self.log("-")
            return
        raw = self.read_body(length)
        try:
            request = json.loads(raw)
            if not isinstance(request, dict):
                raise ValueError("not an object")
        except ValueError:
            self.send_whole(400, error_body("the body is not a JSON object", "invalid_request_error"))
            self.log("-")
            return
        model = str(request.get("model", ""))
        behaviour = model
        if model == "by-question":
            behaviour = first_match(request, MODE) or "normal"
        STATS.begin(model, "Authorization" in self.headers)
        self.counted = True
        extra = None
        try:
            extra = self.complete(behaviour, model, request)
        except OSError:  # the client went (a broken pipe, a reset)
            extra = "the client went"
            self.close_connection = True
        finally:
            self.done()
            notes = [f"as {behaviour}"] if behaviour != model else []
            self.log(model, "; ".join(notes + ([extra] if extra else [])) or None)

    def read_body(self, length):
        if length is None or not length.isdigit():
            return b""
        return self.rfile.read(min(int(length), MAX_REQUEST_BYTES))

    # --- behaviours -----------------------------------------------------------------------

    def complete(self, behaviour, model, request):
        """Answers as `behaviour` asks; returns a note for the log, if any."""
        if behaviour == "rate-limit":
            self.send_whole(429, error_body("rate limited: slow down", "rate_limit_exceeded"),
                            headers=[("Retry-After", "7")])
            return None
        if behaviour == "unavailable":
            self.send_whole(503, error_body("overloaded", "server_error"), headers=[("Retry-After", "3")])
            return None
        if behaviour == "hang":
            self.close_connection = True
            self.client_gone(float("inf"))
            return "held until the client went"
        if behaviour == "trickle":
            return self.trickle()
        if behaviour == "endless":
            return self.endless()
        if behaviour == "close":
            self.close_connection = True
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", "1000")
            self.end_headers()
            self.wfile.write(b'{"choices"')
            self.wfile.flush()
            return "closed after 10 of 1000 bytes"
        if behaviour == "garbage":
            self.send_whole(200, b"<html><body>this is not JSON</body></html>", "text/html")
            return None
        if behaviour == "redirect-metadata":
            self.send_whole(302, b"", "text/plain", headers=[("Location", METADATA)])
            return None
        if STOPPING.wait(self.server.latency):
            self.close_connection = True
            return "stopping"
        text = answer_text(request, model)
        if behaviour == "stream" and request.get("stream") is True:
            return self.stream(model, text)
        self.send_whole(200, completion(model, text))
        return None

    def trickle(self):
        self.close_connection = True
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", "1000000")
        self.end_headers()
        self.wfile.flush()
        while not self.client_gone(1.0):
            self.wfile.write(b" ")
            self.wfile.flush()
        return "trickled until the client went"

    def endless(self):
        self.close_connection = True
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        chunk = b" " * 16384
        framed = b"%x\r\n%s\r\n" % (len(chunk), chunk)
        while not STOPPING.is_set():
            self.wfile.write(framed)
            self.wfile.flush()
        return "stopping"

    def stream(self, model, text):
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        base = {"id": f"chatcmpl-local-{time.monotonic_ns()}", "object": "chat.completion.chunk",
                "created": int(time.time()), "model": model}
        deltas = [{"role": "assistant"}] + [{"content": w + " "} for w in text.split(" ")]
        events = [dict(base, choices=[{"index": 0, "delta": d, "finish_reason": None}]) for d in deltas]
        events.append(dict(base, choices=[{"index": 0, "delta": {}, "finish_reason": "stop"}]))
        payloads = [f"data: {json.dumps(e)}\n\n".encode() for e in events] + [b"data: [DONE]\n\n"]
        for i, payload in enumerate(payloads):
            if i == len(payloads) - 1:
                self.done()
            self.wfile.write(b"%x\r\n%s\r\n" % (len(payload), payload))
            self.wfile.flush()
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()
        return None


class Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, address, latency):
        super().__init__(address, Handler)
        self.latency = latency


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    parser.add_argument("--port", type=int, default=0, help="port (0: any free one)")
    parser.add_argument("--latency-ms", type=int, default=0, help="how long a normal answer takes")
    parser.add_argument(
        "--exit-with-stdin",
        action="store_true",
        help="also stop when standard input closes: a test harness's lifeline, so the upstream "
        "never outlives it (a python3 launcher such as pyenv's shim may not pass on a kill)",
    )
    args = parser.parse_args()
    server = Server((args.host, args.port), args.latency_ms / 1000)
    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    if args.exit_with_stdin:
        threading.Thread(target=lambda: (sys.stdin.buffer.read(), stop.set()), daemon=True).start()
    serving = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.1}, daemon=True)
    serving.start()
    host, port = server.server_address[:2]
    print(f"listening on http://{host}:{port}", flush=True)
    while not stop.wait(0.5):
        pass
    STOPPING.set()
    server.shutdown()
    server.server_close()


if __name__ == "__main__":
    main()
