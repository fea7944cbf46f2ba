#!/usr/bin/env python3
"""An OTLP/HTTP trace receiver for turnstile's tests: what a collector is to turnstile, small.

    target/test-venv/bin/python tests/otlp/receiver.py --port 0 [--exit-with-stdin]

prints one line, `listening on http://127.0.0.1:PORT`, then serves until SIGTERM or SIGINT (or,
with `--exit-with-stdin`, until its standard input closes):

- `POST /v1/traces`: an `ExportTraceServiceRequest` in protobuf (`application/x-protobuf`) or in
  OTLP's JSON (`application/json`), decoded with the OpenTelemetry protocol's own generated
  classes (`opentelemetry-proto`); each span kept. Answers 200 with an empty
  `ExportTraceServiceResponse` (in the request's encoding), or what `/control` asks for.
  A body that does not decode is 400.
- `GET /spans`: every span kept, oldest first, as JSON objects: `trace_id`, `span_id`,
  `parent_span_id` (hex; "" for a root), `name`, `kind` (`server`, `client`, `internal`, …),
  `service` (the resource's `service.name`), `attributes` (an object), `events` (`name` and
  `attributes`), `dropped_events`, `status` (`unset`, `ok`, `error`), `start_ns`, `end_ns`.
- `GET /stats`: `{"exports": N, "spans": N, "refused": N}`.
- `POST /control`: `{"delay_ms": N, "status": CODE}`: how later exports are answered (after
  waiting N ms; with that status: 200 takes the spans, anything else refuses them). `{}` resets.

Loopback by default; bodies over 16 MiB are refused (413).
"""

import argparse
import json
import signal
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from google.protobuf import json_format
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.proto.trace.v1.trace_pb2 import Span, Status

MAX_BODY = 16 * 1024 * 1024
LOCK = threading.Lock()
SPANS = []
STATS = {"exports": 0, "spans": 0, "refused": 0}
CONTROL = {"delay_ms": 0, "status": 200}


def value_of(any_value):
    """An OTLP AnyValue as a Python value."""
    kind = any_value.WhichOneof("value")
    if kind is None:
        return None
    if kind == "array_value":
        return [value_of(v) for v in any_value.array_value.values]
    if kind == "kvlist_value":
        return {kv.key: value_of(kv.value) for kv in any_value.kvlist_value.values}
    if kind == "bytes_value":
        return any_value.bytes_value.hex()
    return getattr(any_value, kind)


def attributes_of(key_values):
    return {kv.key: value_of(kv.value) for kv in key_values}


def kind_name(kind):
    return Span.SpanKind.Name(kind).removeprefix("SPAN_KIND_").lower()


def status_name(code):
    return Status.StatusCode.Name(code).removeprefix("STATUS_CODE_").lower()


def spans_of(request):
    """Every span of an export, flattened, with its service's name."""
    for resource_spans in request.resource_spans:
        service = attributes_of(resource_spans.resource.attributes).get("service.name", "")
        for scope_spans in resource_spans.scope_spans:
            for span in scope_spans.spans:
                yield {
                    "trace_id": span.trace_id.hex(),
                    "span_id": span.span_id.hex(),
                    "parent_span_id": span.parent_span_id.hex(),
                    "name": span.name,
                    "kind": kind_name(span.kind),
                    "service": service,
                    "attributes": attributes_of(span.attributes),
                    "events": [
                        {"name": e.name, "attributes": attributes_of(e.attributes)}
                        for e in span.events
                    ],
                    "dropped_events": span.dropped_events_count,
                    "status": status_name(span.status.code),
                    "trace_state": span.trace_state,
                    "start_ns": span.start_time_unix_nano,
                    "end_ns": span.end_time_unix_nano,
                }


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, format, *args):  # one line per request, on stderr
        sys.stderr.write("%s %s\n" % (self.command, self.path))

    def send(self, status, body, content_type="application/json"):
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def send_json(self, status, value):
        self.send(status, json.dumps(value).encode())

    def body(self):
        length = self.headers.get("Content-Length")
        if length is None or not length.isdigit():
            return None
        if int(length) > MAX_BODY:
            return None
        return self.rfile.read(int(length))

    def do_GET(self):
        with LOCK:
            if self.path == "/spans":
                self.send_json(200, SPANS)
            elif self.path == "/stats":
                self.send_json(200, STATS)
            else:
                self.send_json(404, {"error": "not found"})

    def do_POST(self):
        raw = self.body()
        if raw is None:
            self.close_connection = True
            self.send_json(413, {"error": "no length, or over 16 MiB"})
            return
        if self.path == "/control":
            asked = json.loads(raw or b"{}")
            with LOCK:
                CONTROL["delay_ms"] = int(asked.get("delay_ms", 0))
                CONTROL["status"] = int(asked.get("status", 200))
                self.send_json(200, CONTROL)
            return
        if self.path != "/v1/traces":
            self.send_json(404, {"error": "not found"})
            return
        json_body = self.headers.get("Content-Type", "").startswith("application/json")
        request = ExportTraceServiceRequest()
        try:
            if json_body:
                json_format.Parse(raw, request)
            else:
                request.ParseFromString(raw)
        except Exception as error:  # noqa: BLE001 - whatever does not decode is refused
            self.send_json(400, {"error": f"not an ExportTraceServiceRequest: {error}"})
            return
        with LOCK:
            delay, status = CONTROL["delay_ms"], CONTROL["status"]
        if delay:
            time.sleep(delay / 1000)
        if status != 200:
            with LOCK:
                STATS["refused"] += 1
            self.send_json(status, {"error": "refused, as asked"})
            return
        spans = list(spans_of(request))
        with LOCK:
            STATS["exports"] += 1
            STATS["spans"] += len(spans)
            SPANS.extend(spans)
        response = ExportTraceServiceResponse()
        if json_body:
            self.send(200, json_format.MessageToJson(response).encode())
        else:
            self.send(200, response.SerializeToString(), "application/x-protobuf")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--exit-with-stdin", action="store_true",
                        help="also stop when standard input closes (a test harness's lifeline)")
    args = parser.parse_args()
    server = ThreadingHTTPServer((args.host, args.port), Handler)
    server.daemon_threads = True
    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    if args.exit_with_stdin:
        threading.Thread(target=lambda: (sys.stdin.buffer.read(), stop.set()), daemon=True).start()
    threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.1}, daemon=True).start()
    host, port = server.server_address[:2]
    print(f"listening on http://{host}:{port}", flush=True)
    while not stop.wait(0.5):
        pass
    server.shutdown()
    server.server_close()


if __name__ == "__main__":
    main()
