"""Locust: streamed chat completions against turnstile's `POST /v1/chat/completions`.

The classic demo's profile (60 users, spawn rate 5, no wait time, as the peers' semaphore
locustfile) through the standard API: each user asks the question with `"stream": true`, reads the
server-sent events as they arrive, and reports two rows beside each other in Locust's stats:

- `POST /v1/chat/completions`: the whole stream, from sending the request to `data: [DONE]`
  (Locust itself would stop the clock at the response's headers: with a stream those come with
  the first event, so the time is set to the stream's end before the row is reported);
- `SSE ttft`: the time to the first content delta (the first chunk whose `delta.content` is not
  empty), fired with `events.request.fire`.

A stream that ends without `[DONE]`, or carries an error event, is a failure. Each question ends
with a tag `req:PREFIX-N`, unique in the run, which the test upstream (tests/upstream/upstream.py)
records with its own timings (`GET /stats/requests`); `--chat-timings FILE` writes the client's
per request (tag, sent, first_delta, done as Unix seconds), one JSON object a line, to join them
as bench/rag-stream-demo.sh does.

    target/bench-venv/bin/locust -f bench/locust/chat_stream.py --headless -u 60 -r 5 -t 90s \\
        --host http://127.0.0.1:8080 --csv /tmp/locust-chat/run --csv-full-history \\
        --chat-timings /tmp/locust-chat/requests.jsonl

Locust is pinned in bench/requirements.txt (locust==2.47.0, as the peers use).
"""

import itertools
import json
import threading
import time

from locust import HttpUser, constant, events, task

QUESTION = "How do I parse command line arguments?"
COUNTER = itertools.count(1)
PREFIX = f"l{int(time.time() * 1000):x}"
TIMINGS_LOCK = threading.Lock()
TIMINGS = {"file": None}


@events.init_command_line_parser.add_listener
def set_defaults(parser):
    parser.set_defaults(
        num_users=60,
        spawn_rate=5,
        host="http://127.0.0.1:8080",
        web_host="127.0.0.1",
    )
    parser.add_argument("--chat-model", default="", help="the model (default: the first GET /v1/models lists)")
    parser.add_argument("--chat-question", default=QUESTION, help="the question (each request adds its tag)")
    parser.add_argument("--chat-timings", default="", help="write each request's timings, JSON lines, here")


@events.test_start.add_listener
def open_timings(environment, **_kwargs):
    path = environment.parsed_options.chat_timings if environment.parsed_options else ""
    if path:
        TIMINGS["file"] = open(path, "a", buffering=1, encoding="utf-8")


@events.test_stop.add_listener
def close_timings(environment, **_kwargs):
    with TIMINGS_LOCK:
        if TIMINGS["file"] is not None:
            TIMINGS["file"].close()
            TIMINGS["file"] = None


def write_timing(record):
    with TIMINGS_LOCK:
        if TIMINGS["file"] is not None:
            TIMINGS["file"].write(json.dumps(record) + "\n")


def sse_data(lines):
    """The `data` of each server-sent event, from the body's lines (blank line: event end)."""
    data = []
    for raw in lines:
        line = raw.decode("utf-8", "replace") if isinstance(raw, bytes) else raw
        if line == "":
            if data:
                yield "\n".join(data)
                data = []
        elif line.startswith(":"):
            continue
        elif line.startswith("data:"):
            value = line[5:]
            data.append(value[1:] if value.startswith(" ") else value)
    if data:
        yield "\n".join(data)


def has_content(chunk):
    """Whether a chat.completion.chunk carries a piece of the answer."""
    for choice in chunk.get("choices") or []:
        delta = choice.get("delta") or {}
        if isinstance(delta.get("content"), str) and delta["content"]:
            return True
    return False


class ChatStreamUser(HttpUser):
    """One closed-loop user: a streamed chat completion, read to its end, then the next."""

    wait_time = constant(0)
    model = None

    def on_start(self):
        options = self.environment.parsed_options
        self.question = options.chat_question if options else QUESTION
        self.model = options.chat_model if options and options.chat_model else None
        if self.model is None:
            with self.client.get("/v1/models", name="/v1/models", catch_response=True) as response:
                try:
                    self.model = response.json()["data"][0]["id"]
                except (ValueError, KeyError, IndexError, TypeError):
                    response.failure(f"no model listed: {response.text[:200]!r}")
                    self.model = "turnstile-rag"

    @task
    def chat(self):
        tag = f"{PREFIX}-{next(COUNTER)}"
        body = {
            "model": self.model,
            "messages": [{"role": "user", "content": f"{self.question} req:{tag}"}],
            "stream": True,
        }
        sent_wall = time.time()
        start = time.perf_counter()
        first = None
        done = False
        error = None
        with self.client.post(
            "/v1/chat/completions",
            json=body,
            stream=True,
            catch_response=True,
            name="/v1/chat/completions",
        ) as response:
            if response.status_code != 200:
                error = f"status {response.status_code}"
            else:
                try:
                    # chunk_size=None: each piece as it arrives (no 512-byte read ahead).
                    for data in sse_data(response.iter_lines(chunk_size=None)):
                        if data == "[DONE]":
                            done = True
                            continue
                        chunk = json.loads(data)
                        if "error" in chunk:
                            error = f"error event: {chunk['error']}"
                        elif first is None and has_content(chunk):
                            first = time.perf_counter()
                except Exception as e:  # a broken connection, a chunk that is no JSON
                    error = f"reading the stream: {e!r}"
                if error is None and not done:
                    error = "the stream ended without [DONE]"
            end = time.perf_counter()
            total_ms = (end - start) * 1000
            # The row's time: the whole stream (Locust's own stops at the headers).
            response.request_meta["response_time"] = total_ms
            if error is None:
                response.success()
            else:
                response.failure(error)
        if first is not None:
            events.request.fire(
                request_type="SSE",
                name="ttft",
                response_time=(first - start) * 1000,
                response_length=0,
                exception=None,
                context={},
            )
        write_timing(
            {
                "tag": tag,
                "status": response.status_code if error is None else f"failed: {error}",
                "sent": sent_wall,
                "first_delta": None if first is None else sent_wall + (first - start),
                "done": sent_wall + (end - start),
                "ttft_ms": None if first is None else (first - start) * 1000,
                "total_ms": total_ms,
            }
        )
