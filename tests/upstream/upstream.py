#!/usr/bin/env python3
"""A local OpenAI-compatible chat completions upstream, for turnstile's tests and benchmarks.

    python3 tests/upstream/upstream.py --port 0 --latency-ms 2000 [--stream-ms 500]

prints one line, `listening on http://127.0.0.1:PORT`, then serves until SIGTERM (or SIGINT; with
`--exit-with-stdin`, also until its standard input closes). Python 3.11 standard library only;
loopback by default.

`POST /v1/chat/completions` behaves as the JSON body's `model` asks, so one upstream serves
every case:

- any model not named below: waits --latency-ms, then gives a *normal answer* (below): a chat
  completion whose content quotes the first source id of the prompt (the first `id: X` in its
  messages), e.g. "According to [json.dumps], ...", so a test can tell the answer came from the
  prompt;
- `stream`: a normal answer (the name stays: it once was the only model that streamed);
- `rate-limit`: 429 with `Retry-After: 7` and a JSON error body;
- `unavailable`: 503 with `Retry-After: 3` and a JSON error body;
- `auth-failed`: 401 with an OpenAI error body (code `invalid_api_key`), at once;
- `forbidden`: 403 with an OpenAI error body (code `permission_denied`), at once;
- `server-error`: 500 with an OpenAI error body (type `server_error`), at once;
- `hang`: reads the request, never answers, holds the connection until the client goes;
- `trickle`: 200 and its headers, then one byte of body a second, forever;
- `endless`: 200 and a chunked body that never ends, written as fast as it goes;
- `close`: 200 with `Content-Length: 1000`, 10 bytes, then the connection is closed;
- `garbage`: 200 with a body that is not JSON;
- `redirect-metadata`: 302 to `http://169.254.169.254/latest/meta-data/`;
- `stall`: waits --latency-ms, streams (whatever the request's `stream`) a normal answer's role
  chunk and first 2 tokens, then sends nothing more, holding the stream open until the client goes;
- `stream-error`: the same start, then `data: {"error": {"message": "the model crashed", "type":
  "server_error", ...}}` and the end of the body: no finish chunk, no `[DONE]`;
- `by-question`: the behaviour named in the prompt as `upstream-mode:NAME` (one of the models
  above; none: normal) — so one client whose model is fixed (a plugin's setting) can meet every
  behaviour in turn, each question asking for one.

A normal answer's text is that sentence; with `--answer-words N` (N > 0), exactly N words: the
sentence's own, then `word1 word2 …` (or the sentence cut to N). Its tokens are its words, each
with the space after it. A request's `max_tokens` or `max_completion_tokens` (the smaller, if
both) under the answer's token count cuts it to that many tokens, with `finish_reason: "length"`
(else `"stop"`). With `"stream": true` the answer comes as server-sent events, each event one
chunk of a chunked body: `chat.completion.chunk`s with `"delta": {"role": "assistant", "content":
""}`, then one per token (`"delta": {"content": TOKEN}`), then `"delta": {}` and the finish
reason, then — with `"stream_options": {"include_usage": true}` — one with `"choices": []` and the
usage, then `data: [DONE]`. Without, one `chat.completion`. Either way the usage counts
`prompt_tokens` as the whitespace-separated words of all the messages' text, `completion_tokens`
as the tokens sent. --latency-ms is the wait before the first token (nothing, not even headers, is
sent before it; not streamed: before the whole answer); --stream-ms N spreads a streamed answer's
tokens over N ms, one every N/T ms (T: the answer's tokens before any cut, so a cut answer ends
sooner).

A client that closes its connection while the upstream waits its latency, holds, or streams is
noticed within 50 ms (as is a write to it that fails): the upstream stops that answer at once and
closes its end.

With `--require-key KEY` (or, without the flag, a non-empty `UPSTREAM_REQUIRE_KEY` in the
environment, so the key need not show in a process list), a completions request whose
`Authorization` header is not exactly `Bearer KEY` is answered as `auth-failed`, whatever its
model. `--require-header NAME:KEY` (or `UPSTREAM_REQUIRE_HEADER`) asks the same of header NAME
(in any case), whose value must be exactly KEY: a credential injected as a custom header. Given
both, both must hold.

`GET /stats` answers what it has counted of the completions requests: `{"requests": N,
"in_flight": K, "max_in_flight": M, "by_model": {...}, "authorization_seen": true|false,
"authorization_values": V, "auth_accepted": A, "auth_rejected": R, "client_closed": C,
"streams_open": S, "streams_completed": D}`: whether any request had an `Authorization` header and
how many distinct values those had (never a value); the requests the required credentials let
through and turned away (a request turned away still counts in `requests`); the requests whose
client closed before their answer was complete; the streams being sent now, and those sent to
their `[DONE]`.

A request whose messages carry a tag `req:TAG` (the first; up to 64 letters, digits, `_`, `-`) is
timed: `GET /stats/requests` answers `{"requests": [{"tag": TAG, "arrived": T, "first_token": T,
"done": T, "client_closed": true|false}, ...]}`, the last 20,000 such requests in the order they
ended, times in Unix seconds (`time.time()`): when its headers were read; when its first token's
chunk was written and flushed, or its whole answer written (null: neither); when its answer ended,
complete or not; and whether its client left first — for benchmarks to measure what a client saw.

`GET /status/CODE` answers status CODE (200–599) at once, with `Retry-After: 7` for a 429 or a
503; `GET /slow/MS` answers 200 after MS milliseconds (at most 60,000): backends for plugins that
make plain requests (the `fetch` fixture). They are not counted in `/stats`.

With `--tls-cert PEM --tls-key PEM` it serves HTTPS (and says `listening on https://…`).

With `--otlp-endpoint URL` (an OTLP/HTTP collector's base URL), the upstream traces as a model
server instrumented with OpenTelemetry does: each completions request is a server span, exported
with the OpenTelemetry Python SDK (service `upstream`), whose parent is the request's W3C
`traceparent` — so it joins the caller's trace. (That needs the SDK: tests/requirements.txt's
venv; without the flag, the standard library is enough.)

`POST /stats/reset` zeroes the counts and forgets the timings (`in_flight` and `streams_open` say
what is going on now: they stay). `GET /v1/models` lists one model, `local-model`. Each request is
logged to stderr as one line: method, path, model, status (and what became of it). Headers are
never logged, nor returned.
"""

import argparse
import collections
import hashlib
import json
import os
import re
import select
import signal
import socket
import ssl
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

MAX_REQUEST_BYTES = 1 << 20
SOURCE_ID = re.compile(r"\bid:\s*(\S+)")
MODE = re.compile(r"\bupstream-mode:([a-z-]+)")
TAG = re.compile(r"\breq:([A-Za-z0-9_-]{1,64})")
METADATA = "http://169.254.169.254/latest/meta-data/"
# The timings kept for `/stats/requests`: a long benchmark's worth, bounded.
MAX_RECORDS = 20_000
# How often a wait looks again at its client (a close wakes it at once) and at STOPPING.
POLL = 0.05
# The tokens `stall` and `stream-error` send before they stall or fail.
TOKENS_BEFORE_TROUBLE = 2
# Set when the server stops: every request still being served (hang, trickle, endless) ends.
STOPPING = threading.Event()


def openai_error(message, kind, code):
    """An error body as OpenAI's API writes one."""
    return {"error": {"message": message, "type": kind, "param": None, "code": code}}


AUTH_FAILED = openai_error("Incorrect API key provided", "invalid_request_error", "invalid_api_key")
FORBIDDEN = openai_error("You are not allowed to use this model", "invalid_request_error",
                         "permission_denied")
SERVER_ERROR = openai_error("The server had an error while processing your request", "server_error",
                            None)
STREAM_ERROR = openai_error("the model crashed", "server_error", None)
MODELS = {"object": "list",
          "data": [{"id": "local-model", "object": "model", "created": 0, "owned_by": "turnstile-tests"}]}


class Stats:
    """The completions requests seen: how many, how many at once, by model, and how they ended."""

    def __init__(self):
        self.lock = threading.Lock()
        # What is going on now: a reset leaves these.
        self.in_flight = 0
        self.streams_open = 0
        self._zero()

    def _zero(self):
        self.requests = 0
        self.max_in_flight = self.in_flight
        self.by_model = {}
        self.authorization_seen = False
        # Digests of the Authorization values seen: enough to count them, never to show one.
        self.authorizations = set()
        self.auth_accepted = 0
        self.auth_rejected = 0
        self.client_closed = 0
        self.streams_completed = 0
        self.records = collections.deque(maxlen=MAX_RECORDS)

    def reset(self):
        with self.lock:
            self._zero()

    def begin(self, model, authorizations):
        with self.lock:
            self.requests += 1
            self.in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)
            self.by_model[model] = self.by_model.get(model, 0) + 1
            self.authorization_seen = self.authorization_seen or bool(authorizations)
            self.authorizations.update(hashlib.sha256(v.encode()).digest() for v in authorizations)

    def end(self):
        with self.lock:
            self.in_flight -= 1

    def count(self, name):
        """Adds one to the count `name` (`auth_accepted`, `client_closed`, ...)."""
        with self.lock:
            setattr(self, name, getattr(self, name) + 1)

    def stream_opened(self):
        with self.lock:
            self.streams_open += 1

    def stream_closed(self, completed):
        with self.lock:
            self.streams_open -= 1
            self.streams_completed += 1 if completed else 0

    def record(self, timing):
        with self.lock:
            self.records.append(timing)

    def timings(self):
        with self.lock:
            return {"requests": list(self.records)}

    def snapshot(self):
        with self.lock:
            return {
                "requests": self.requests,
                "in_flight": self.in_flight,
                "max_in_flight": self.max_in_flight,
                "by_model": dict(self.by_model),
                "authorization_seen": self.authorization_seen,
                "authorization_values": len(self.authorizations),
                "auth_accepted": self.auth_accepted,
                "auth_rejected": self.auth_rejected,
                "client_closed": self.client_closed,
                "streams_open": self.streams_open,
                "streams_completed": self.streams_completed,
            }


STATS = Stats()


class Exchange:
    """One completions request as its client saw it: the times `/stats/requests` reports."""

    def __init__(self, tag, arrived):
        self.tag = tag
        self.arrived = arrived
        self.first_token = None
        self.done = None
        # Whether the client left before its answer was complete (counted once).
        self.client_closed = False

    def record(self):
        return {"tag": self.tag, "arrived": self.arrived, "first_token": self.first_token,
                "done": self.done, "client_closed": self.client_closed}


def message_texts(request):
    """The text of the request's messages: each string content, each text part."""
    for message in request.get("messages") or []:
        content = message.get("content") if isinstance(message, dict) else None
        texts = [content] if isinstance(content, str) else []
        if isinstance(content, list):
            texts = [p.get("text") for p in content if isinstance(p, dict)]
        yield from (text for text in texts if isinstance(text, str))


def first_match(request, pattern):
    """The first group of `pattern` in the request's messages (text or text parts), or None."""
    for text in message_texts(request):
        found = pattern.search(text)
        if found:
            return found.group(1)
    return None


def prompt_tokens(request):
    """The prompt's size for `usage`: the whitespace-separated words of its messages."""
    return sum(len(text.split()) for text in message_texts(request))


def answer_text(request, model):
    source = first_match(request, SOURCE_ID)
    if source is None:
        return "The prompt names no source, so there is nothing to answer from."
    return f"According to [{source}], the sources answer this question (local upstream, model {model})."


def answer_words(request, model, words):
    """The normal answer's words: the sentence's, padded with `word1 word2 …` or cut to `words`
    when that is over 0 (a benchmark's answer length)."""
    own = answer_text(request, model).split(" ")
    if words <= 0:
        return own
    return (own + [f"word{i}" for i in range(1, words + 1)])[:words]


def token_limit(request):
    """The smaller of the request's `max_tokens` and `max_completion_tokens`; None: neither."""
    limits = [request.get(name) for name in ("max_tokens", "max_completion_tokens")]
    return min((n for n in limits if type(n) is int and n >= 0), default=None)


def usage(prompt, completion):
    return {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion}


def completion(model, words, finish, prompt):
    return {
        "id": f"chatcmpl-local-{time.monotonic_ns()}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": " ".join(words)},
                "finish_reason": finish,
            }
        ],
        "usage": usage(prompt, len(words)),
    }


def error_body(message, kind):
    return {"error": {"message": message, "type": kind, "code": kind}}


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "turnstile-test-upstream/1"

    def setup(self):
        super().setup()
        # As model servers do (uvicorn, vLLM, TGI): each event goes out when written, not held by
        # Nagle's algorithm until the reader's delayed ACK (~40 ms a first token on loopback).
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def version_string(self):
        return self.server_version
    # Whether the request being served is counted in flight.
    counted = False
    # Whether it is counted in `streams_open`.
    streaming = False
    # The status sent for it, if any yet.
    status_sent = None
    # The completions request being served, if one is.
    exchange = None

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
        self.first_token()

    def send_event(self, event, last=False):
        """One server-sent event (`data: JSON`, or bytes as they are) as one flushed chunk;
        `last`: the chunk that ends the body follows in the same write."""
        data = event if isinstance(event, bytes) else f"data: {json.dumps(event)}\n\n".encode()
        self.wfile.write(b"%x\r\n%s\r\n%s" % (len(data), data, b"0\r\n\r\n" if last else b""))
        self.wfile.flush()

    def client_gone(self, timeout):
        """Waits up to `timeout` seconds; True if the client closed its end (or the server stops).
        A close wakes the wait at once; it looks at least once, even for a timeout of 0."""
        deadline = time.monotonic() + timeout
        while not STOPPING.is_set():
            wait = max(0.0, min(deadline - time.monotonic(), POLL))
            readable, _, _ = select.select([self.connection], [], [], wait)
            if readable:
                try:
                    if not self.connection.recv(1, socket.MSG_PEEK):
                        return True
                except OSError:
                    return True
                # Bytes the client sent early: nothing to do with them now.
                time.sleep(wait)
            if time.monotonic() >= deadline:
                return False
        return True

    def went(self, note="the client went"):
        """After a wait that ended early: the server stops, or the client went (counted, once).
        Either way this connection is done; returns the note for the log."""
        self.close_connection = True
        if STOPPING.is_set():
            return "stopping"
        if self.exchange is not None and not self.exchange.client_closed:
            self.exchange.client_closed = True
            STATS.count("client_closed")
        return note

    def first_token(self):
        """Notes the time the client got the first token (or a whole answer), once."""
        if self.exchange is not None and self.exchange.first_token is None:
            self.exchange.first_token = time.time()

    def done(self):
        """Counts this request out of `in_flight` (once)."""
        if self.counted:
            self.counted = False
            STATS.end()

    def stream_over(self, completed):
        """Counts this request's stream out of `streams_open` (once); `completed`: to `[DONE]`."""
        if self.streaming:
            self.streaming = False
            STATS.stream_closed(completed)

    # --- routes ---------------------------------------------------------------------------

    def do_GET(self):
        if self.path == "/stats":
            self.send_whole(200, STATS.snapshot())
        elif self.path == "/stats/requests":
            self.send_whole(200, STATS.timings())
        elif self.path.split("?")[0] == "/v1/models":
            self.send_whole(200, MODELS)
        elif re.fullmatch(r"/status/[1-5][0-9][0-9]", self.path) and int(self.path[8:]) >= 200:
            code = int(self.path[8:])
            retry = [("Retry-After", "7")] if code in (429, 503) else []
            self.send_whole(code, error_body(f"status {code}", "asked_for"), headers=retry)
        elif re.fullmatch(r"/slow/[0-9]{1,5}", self.path) and int(self.path[6:]) <= 60000:
            time.sleep(int(self.path[6:]) / 1000)
            self.send_whole(200, {"slow": True})
        else:
            self.send_whole(404, error_body("not found", "not_found"))
        self.log("-")

    def do_POST(self):
        arrived = time.time()
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
        span = TRACING.server_span(self.headers, model) if TRACING else None
        self.exchange = Exchange(first_match(request, TAG), arrived)
        STATS.begin(model, self.headers.get_all("Authorization") or [])
        self.counted = True
        extra = None
        try:
            if self.key_accepted():
                extra = self.complete(behaviour, model, request)
            else:
                self.send_whole(401, AUTH_FAILED)
                extra = "the key was refused"
        except OSError:  # the client went (a broken pipe, a reset)
            extra = self.went()
        finally:
            self.done()
            self.stream_over(completed=False)
            self.exchange.done = time.time()
            if self.exchange.tag is not None:
                STATS.record(self.exchange.record())
            self.exchange = None
            notes = [f"as {behaviour}"] if behaviour != model else []
            self.log(model, "; ".join(notes + ([extra] if extra else [])) or None)
            if span is not None:
                span.end()

    def read_body(self, length):
        if length is None or not length.isdigit():
            return b""
        return self.rfile.read(min(int(length), MAX_REQUEST_BYTES))

    def key_accepted(self):
        """Whether the request carries the credentials required (`--require-key`,
        `--require-header`), each header once with exactly its value; counted when any is."""
        required = self.server.required
        if not required:
            return True
        accepted = all(self.headers.get_all(name) == [value] for name, value in required)
        STATS.count("auth_accepted" if accepted else "auth_rejected")
        return accepted

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
        if behaviour == "auth-failed":
            self.send_whole(401, AUTH_FAILED)
            return None
        if behaviour == "forbidden":
            self.send_whole(403, FORBIDDEN)
            return None
        if behaviour == "server-error":
            self.send_whole(500, SERVER_ERROR)
            return None
        if behaviour == "hang":
            self.close_connection = True
            self.client_gone(float("inf"))
            return self.went("held until the client went")
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
        # A normal answer (or the start of one, for `stall` and `stream-error`).
        if self.client_gone(self.server.latency):
            return self.went()
        words = answer_words(request, model, self.server.answer_words)
        limit = token_limit(request)
        sent = words if limit is None else words[:limit]
        finish = "length" if len(sent) < len(words) else "stop"
        prompt = prompt_tokens(request)
        if behaviour in ("stall", "stream-error") or request.get("stream") is True:
            return self.stream(model, behaviour, request, sent, finish, prompt, len(words))
        self.send_whole(200, completion(model, sent, finish, prompt))
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
        return self.went("trickled until the client went")

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

    def stream(self, model, behaviour, request, tokens, finish, prompt, total):
        """`tokens` as server-sent events, one every --stream-ms / `total`; `stall` holds after
        the first few, `stream-error` fails after them."""
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        self.streaming = True
        STATS.stream_opened()
        base = {"id": f"chatcmpl-local-{time.monotonic_ns()}", "object": "chat.completion.chunk",
                "created": int(time.time()), "model": model}

        def chunk(delta, finish_reason=None):
            return dict(base, choices=[{"index": 0, "delta": delta, "finish_reason": finish_reason}])

        gap = self.server.stream_time / total if total else 0.0
        troubled = behaviour in ("stall", "stream-error")
        self.send_event(chunk({"role": "assistant", "content": ""}))
        for i, token in enumerate(tokens[:TOKENS_BEFORE_TROUBLE] if troubled else tokens):
            if i > 0 and self.client_gone(gap):
                return self.went()
            self.send_event(chunk({"content": token + " "}))
            self.first_token()
        if behaviour == "stall":
            self.client_gone(float("inf"))
            return self.went("stalled until the client went")
        # The answer ends here: counted out before the client can see its end (as `send_whole`).
        self.done()
        if behaviour == "stream-error":
            self.stream_over(completed=False)
            self.send_event(STREAM_ERROR, last=True)
            return "an error mid-stream"
        self.send_event(chunk({}, finish))
        stream_options = request.get("stream_options")
        if isinstance(stream_options, dict) and stream_options.get("include_usage") is True:
            self.send_event(dict(base, choices=[], usage=usage(prompt, len(tokens))))
        self.stream_over(completed=True)
        self.send_event(b"data: [DONE]\n\n", last=True)
        return f"streamed {len(tokens)} tokens"


class Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    # socketserver's backlog of 5 drops a burst of connections (a benchmark's users starting at
    # once), whose clients then retry a second or more later: timings the upstream never caused.
    request_queue_size = 1024

    def __init__(self, address, latency, stream_time, answer_words, required):
        super().__init__(address, Handler)
        self.latency = latency
        self.stream_time = stream_time
        self.answer_words = answer_words
        # (header name, exact value) pairs every completions request must carry.
        self.required = required


def non_negative(value):
    number = int(value)
    if number < 0:
        raise argparse.ArgumentTypeError("must be 0 or more")
    return number


def required_headers(parser, args):
    """What --require-key and --require-header (or their environment variables) ask for. A key
    is never echoed, not even in an error."""
    required = []
    key = args.require_key if args.require_key is not None else os.environ.get("UPSTREAM_REQUIRE_KEY", "")
    if key:
        required.append(("Authorization", f"Bearer {key}"))
    header = args.require_header
    if header is None:
        header = os.environ.get("UPSTREAM_REQUIRE_HEADER", "")
    if header:
        name, colon, value = header.partition(":")
        if not colon or not name.strip() or not value:
            parser.error("--require-header (or UPSTREAM_REQUIRE_HEADER): expected NAME:KEY")
        required.append((name.strip(), value))
    return required


class Tracing:
    """The upstream's own traces (`--otlp-endpoint`): the OpenTelemetry SDK, each span exported as
    it ends (so a test sees it at once), its parent taken from the request's `traceparent`."""

    def __init__(self, endpoint):
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import SimpleSpanProcessor
        from opentelemetry.trace import SpanKind
        from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

        provider = TracerProvider(resource=Resource.create({"service.name": "upstream"}))
        exporter = OTLPSpanExporter(endpoint=endpoint.rstrip("/") + "/v1/traces")
        provider.add_span_processor(SimpleSpanProcessor(exporter))
        self.tracer = provider.get_tracer("upstream")
        self.propagator = TraceContextTextMapPropagator()
        self.kind = SpanKind.SERVER

    def server_span(self, headers, model):
        """A started span for a request with `headers` (end it when answered)."""
        carrier = {name.lower(): value for name, value in headers.items()}
        parent = self.propagator.extract(carrier)
        return self.tracer.start_span("chat " + model, context=parent, kind=self.kind,
                                      attributes={"gen_ai.request.model": model})


TRACING = None


def main():
    global TRACING
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    parser.add_argument("--port", type=int, default=0, help="port (0: any free one)")
    parser.add_argument("--latency-ms", type=int, default=0,
                        help="the wait before a normal answer's first token (or the whole answer)")
    parser.add_argument("--stream-ms", type=non_negative, default=0,
                        help="how long a streamed answer's tokens take, spread evenly (default 0)")
    parser.add_argument("--answer-words", type=non_negative, default=0,
                        help="a normal answer's length in words, padded or cut (default 0: as it is)")
    parser.add_argument("--require-key", metavar="KEY",
                        help="answer 401 unless `Authorization: Bearer KEY` (rather: the environment's "
                        "UPSTREAM_REQUIRE_KEY, which no process list shows)")
    parser.add_argument("--require-header", metavar="NAME:KEY",
                        help="answer 401 unless header NAME is exactly KEY (or UPSTREAM_REQUIRE_HEADER)")
    parser.add_argument(
        "--exit-with-stdin",
        action="store_true",
        help="also stop when standard input closes: a test harness's lifeline, so the upstream "
        "never outlives it (a python3 launcher such as pyenv's shim may not pass on a kill)",
    )
    parser.add_argument("--tls-cert", metavar="PEM",
                        help="serve HTTPS with this certificate chain (and --tls-key)")
    parser.add_argument("--tls-key", metavar="PEM", help="the certificate's private key")
    parser.add_argument("--otlp-endpoint", metavar="URL",
                        help="trace each completions request to this OTLP/HTTP collector")
    args = parser.parse_args()
    if args.otlp_endpoint:
        TRACING = Tracing(args.otlp_endpoint)
    required = required_headers(parser, args)
    server = Server((args.host, args.port), args.latency_ms / 1000, args.stream_ms / 1000,
                    args.answer_words, required)
    scheme = "http"
    if args.tls_cert:
        if not args.tls_key:
            parser.error("--tls-cert needs --tls-key")
        tls = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        tls.load_cert_chain(args.tls_cert, args.tls_key)
        # The handshake happens in the connection's own thread, on its first read.
        server.socket = tls.wrap_socket(server.socket, server_side=True,
                                        do_handshake_on_connect=False)
        scheme = "https"
    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    if args.exit_with_stdin:
        threading.Thread(target=lambda: (sys.stdin.buffer.read(), stop.set()), daemon=True).start()
    serving = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.1}, daemon=True)
    serving.start()
    host, port = server.server_address[:2]
    print(f"listening on {scheme}://{host}:{port}", flush=True)
    while not stop.wait(0.5):
        pass
    STOPPING.set()
    server.shutdown()
    server.server_close()


if __name__ == "__main__":
    main()
