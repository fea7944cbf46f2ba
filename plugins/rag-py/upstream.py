"""The HTTP call: one `POST` of a JSON body through `wasi:http/outgoing-handler` (WASI 0.2, the
bindings componentize-py generates from `wit/deps/http.wit`), and the answer read as it streams:
each server-sent event passed on as its bytes arrive (`blocking-read` of the body's input-stream,
never the whole body first), or a whole answer when the upstream does not stream (at most
MAX_BODY_BYTES). The host decides whether it is sent at all (a request to an origin it did not
grant is refused with `HTTP-request-denied`) and bounds it: timeouts, body caps. A redirect is a
status like any other: never followed.

A port of `plugins/rag/src/upstream.rs`. The resources are dropped in the order the host needs
(a stream before its body, a pollable before its future): each is a `with` inside its parent's.
"""

from __future__ import annotations

from enum import Enum
from typing import Callable, NamedTuple

from componentize_py_types import Err, Ok
from wit_world.imports import outgoing_handler, types
from wit_world.imports.streams import InputStream, StreamError_LastOperationFailed

import completion
from chunks import DONE, Finish, NotJson, StreamError, part
from settings import Upstream
from sse import Events, TooLong

#: The most the plugin reads of an answer (the host's own cap may be lower).
MAX_BODY_BYTES = 1 << 20
#: How much `blocking-write-and-flush` takes at once.
WRITE_CHUNK = 4096
#: How much one `blocking-read` asks for.
READ_CHUNK = 64 * 1024
#: The message the host's cancellation (the client went) starts with.
CANCELLED = "cancelled"


class Kind(Enum):
    """Why the call gave no answer to read."""

    #: The host refused to send it (no grant covers the origin, or conformance work).
    DENIED = "denied"
    #: The upstream answered with a status other than 2xx, or the request failed on its way, or
    #: its answer broke off, was too large, or could not be read: the message says which.
    FAILED = "failed"
    #: The key is no valid header value.
    BAD_KEY = "bad-key"
    #: The client went away: the host cancelled the request (or the answer's reader stopped).
    CLIENT_GONE = "client-gone"


class Failure(Exception):
    """Why the call gave no answer. The message names what happened, never a header or a byte
    of the response."""

    def __init__(self, kind: Kind, message: str) -> None:
        super().__init__(message)
        self.kind = kind
        self.message = message




def denied() -> Failure:
    return Failure(Kind.DENIED, "upstream request denied by the host")


def bad_key() -> Failure:
    return Failure(Kind.BAD_KEY, "api_key: not a valid header value")


def client_gone() -> Failure:
    return Failure(Kind.CLIENT_GONE, "the client went away")


def too_large() -> Failure:
    return Failure(Kind.FAILED, f"upstream answer over {MAX_BODY_BYTES} bytes")


def internal() -> Failure:
    """A call of the bindings that cannot fail unless the plugin misuses them."""
    return Failure(Kind.FAILED, describe(types.ErrorCode_InternalError(None)))

# What each error code means, in a few words (the others: "upstream request failed").
_TIMED_OUT = "upstream timed out"
_CLOSED = "upstream closed the connection mid-answer"
_WHAT = {
    types.ErrorCode_DnsTimeout: _TIMED_OUT,
    types.ErrorCode_ConnectionTimeout: _TIMED_OUT,
    types.ErrorCode_ConnectionReadTimeout: _TIMED_OUT,
    types.ErrorCode_ConnectionWriteTimeout: _TIMED_OUT,
    types.ErrorCode_HttpResponseTimeout: _TIMED_OUT,
    types.ErrorCode_ConnectionRefused: "upstream refused the connection",
    types.ErrorCode_ConnectionTerminated: _CLOSED,
    types.ErrorCode_HttpResponseIncomplete: _CLOSED,
    types.ErrorCode_ConnectionLimitReached: "too many requests in flight to the upstream",
    types.ErrorCode_HttpResponseBodySize: "upstream answer over the host's size cap",
    types.ErrorCode_DestinationIpProhibited: "upstream address refused by the host",
}


def describe(code: types.ErrorCode) -> str:
    """A short name for what went wrong, and the code's name without its payload (a host's free
    text): `upstream timed out (ConnectionReadTimeout)`, as the Rust plugin writes it."""
    what = _WHAT.get(type(code), "upstream request failed")
    return f"{what} ({type(code).__name__.removeprefix('ErrorCode_')})"


def short(text: str) -> str:
    """At most 120 characters of `text`, on one line."""
    return "".join(" " if ord(c) < 0x20 or 0x7F <= ord(c) <= 0x9F else c for c in text[:120])


def failure_of(code: types.ErrorCode) -> Failure:
    """What the host's error code means for the plugin."""
    if isinstance(code, types.ErrorCode_HttpRequestDenied):
        return denied()
    if isinstance(code, types.ErrorCode_InternalError) and (code.value or "").startswith(CANCELLED):
        return client_gone()
    return Failure(Kind.FAILED, describe(code))


def stream_failure(error: Err) -> Failure:
    """A stream's error: the host's error code when it names one; else its description decides
    (wasmtime-wasi-http 48 keeps a body's failure as its own error type, which `http-error-code`
    does not recognise: a fixed phrase such as "connection read timeout", never a byte of the
    response)."""
    if not isinstance(error.value, StreamError_LastOperationFailed):
        return failure_of(types.ErrorCode_ConnectionTerminated())
    with error.value.value as cause:
        code = types.http_error_code(cause)
        if code is not None:
            return failure_of(code)
        why = cause.to_debug_string()
    if CANCELLED in why:
        return client_gone()
    return Failure(Kind.FAILED, f"upstream answer broke off ({short(why)})")


class Ended(NamedTuple):
    """How the answer ended."""

    #: Why, if the upstream said.
    finish: Finish | None
    #: Prompt and completion tokens, if the upstream said.
    usage: tuple[int, int] | None


def ask(upstream: Upstream, key: str | None, body: bytes, content: Callable[[str], bool]) -> Ended:
    """POSTs `body` (JSON) to the upstream's completions path, with `Authorization: Bearer KEY`
    when a key is given (a host-bound credential needs none here), and hands each piece of the
    answer to `content` as it arrives: each event of a streamed answer (`text/event-stream`), or
    the whole content of one that came whole. `content` returns False to stop reading (the client
    went, or the answer is full): then a CLIENT_GONE failure is raised. Raises Failure."""
    with _send(upstream, key, body) as response:
        status = response.status()
        if not 200 <= status < 300:
            raise Failure(Kind.FAILED, f"upstream answered {status}")
        with response.headers() as headers:
            streamed = any(b"text/event-stream" in v for v in headers.get("content-type"))
        with _consume(response) as incoming, _body_stream(incoming) as stream:
            if not streamed:
                try:
                    answer = completion.whole(_read_all(stream))
                except completion.Unreadable as error:
                    raise Failure(Kind.FAILED, str(error)) from None
                content(answer.content)
                return Ended(answer.finish, answer.usage)
            return _events(stream, content)


def _events(stream: InputStream, content: Callable[[str], bool]) -> Ended:
    """The events of a streamed answer, each handed on as soon as its bytes have come."""
    events = Events()
    finish, usage = None, None
    while True:
        try:
            chunk = stream.blocking_read(READ_CHUNK)
        except Err as error:
            if isinstance(error.value, StreamError_LastOperationFailed):
                raise stream_failure(error) from None
            # A stream that closed without `[DONE]`: what came is the answer.
            return Ended(finish, usage)
        try:
            completed = events.push(chunk)
        except TooLong:
            raise too_large() from None
        for data in completed:
            if data.strip() == DONE:
                return Ended(finish, usage)
            try:
                read = part(data)
            except NotJson:
                raise Failure(Kind.FAILED, "upstream streamed invalid JSON") from None
            except StreamError:
                raise Failure(Kind.FAILED, "upstream reported an error in its stream") from None
            if read.content is not None and not content(read.content):
                raise client_gone()
            finish = read.finish or finish
            usage = read.usage or usage


def _send(upstream: Upstream, key: str | None, body: bytes) -> types.IncomingResponse:
    """Sends the request; the response once its head has come."""
    headers = [
        ("content-type", b"application/json"),
        ("accept", b"text/event-stream, application/json"),
        # Say the length: some servers (Python's http.server) read no chunked request body.
        ("content-length", str(len(body)).encode()),
    ]
    if key is not None:
        headers.append(("authorization", f"Bearer {key}".encode()))
    try:
        fields = types.Fields.from_list(headers)
    except Err:
        raise bad_key() from None
    request = types.OutgoingRequest(fields)
    try:
        request.set_method(types.Method_Post())
        request.set_scheme(types.Scheme_Https() if upstream.https else types.Scheme_Http())
        request.set_authority(upstream.authority)
        request.set_path_with_query(upstream.path)
        outgoing = request.body()
    except Err:
        raise internal() from None
    try:
        pending = outgoing_handler.handle(request, None)
    except Err as error:
        raise failure_of(error.value) from None
    with pending:
        # The body goes while the host sends the request. A refused request's body has nowhere to
        # go: its write fails, and the response says why.
        written = _write_body(outgoing, body)
        try:
            types.OutgoingBody.finish(outgoing, None)
            finished = None
        except Err as error:
            finished = failure_of(error.value)
        while (result := pending.get()) is None:
            with pending.subscribe() as ready:
                ready.block()
        if isinstance(result, Err):
            raise internal()
        if isinstance(result.value, Err):
            raise failure_of(result.value.value)
        response = result.value.value
    if written is not None or finished is not None:
        with response:
            raise written or finished
    return response


def _write_body(outgoing: types.OutgoingBody, body: bytes) -> Failure | None:
    """Writes `body`; why it could not be written, if it could not."""
    try:
        stream = outgoing.write()
    except Err:
        return internal()
    with stream:
        for start in range(0, len(body), WRITE_CHUNK):
            try:
                stream.blocking_write_and_flush(body[start:start + WRITE_CHUNK])
            except Err as error:
                return stream_failure(error)
    return None


def _consume(response: types.IncomingResponse) -> types.IncomingBody:
    try:
        return response.consume()
    except Err:
        raise internal() from None


def _body_stream(incoming: types.IncomingBody) -> InputStream:
    try:
        return incoming.stream()
    except Err:
        raise internal() from None


def _read_all(stream: InputStream) -> bytes:
    """A whole body, at most MAX_BODY_BYTES."""
    body = bytearray()
    while True:
        try:
            body += stream.blocking_read(READ_CHUNK)
        except Err as error:
            if isinstance(error.value, StreamError_LastOperationFailed):
                raise stream_failure(error) from None
            return bytes(body)
        if len(body) > MAX_BODY_BYTES:
            raise too_large()
