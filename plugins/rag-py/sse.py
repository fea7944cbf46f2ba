"""A server-sent events body, read as its bytes arrive: each event's `data` (its `data:` lines
joined by newlines), handed on as soon as the blank line that ends it has arrived -- so each token
of a streamed answer is passed on at once. Lines end with `\\n`, `\\r\\n` or `\\r`; other fields
(`event:`, `id:`, comments) are skipped. Bounded: a line or an event longer than MAX_EVENT_BYTES is
an error, whatever the upstream sends.

A port of `plugins/rag/src/sse.rs`, a line at a time rather than a byte at a time (the regex
engine finds the line ends, not a Python loop).
"""

from __future__ import annotations

import re

#: Longest event (or line) taken, in bytes.
MAX_EVENT_BYTES = 1 << 20

_LINE_END = re.compile(rb"\r\n|\r|\n")


class TooLong(Exception):
    """An event longer than MAX_EVENT_BYTES."""


class Events:
    """The events of a body, as its bytes come."""

    def __init__(self) -> None:
        # The bytes of the line being read.
        self._line = bytearray()
        # The data of the event being read, its `data:` lines.
        self._data: list[str] = []
        self._data_bytes = 0
        # The last byte was a `\r`: a `\n` right after it ends nothing more.
        self._after_cr = False

    def push(self, chunk: bytes) -> list[str]:
        """Takes in `chunk`; returns the data of every event it completes, in order. Raises
        TooLong past the bound."""
        done: list[str] = []
        start = 1 if self._after_cr and chunk[:1] == b"\n" else 0
        for end in _LINE_END.finditer(chunk, start):
            self._extend(chunk[start:end.start()])
            data = self._end_line()
            if data is not None:
                done.append(data)
            start = end.end()
        self._extend(chunk[start:])
        if chunk:
            self._after_cr = chunk.endswith(b"\r")
        return done

    def _extend(self, part: bytes) -> None:
        self._line += part
        if len(self._line) > MAX_EVENT_BYTES:
            raise TooLong

    def _end_line(self) -> str | None:
        """Ends the line read: a blank line dispatches the event (if it had data)."""
        line = self._line.decode("utf-8", "replace")
        self._line = bytearray()
        if not line:
            data = "\n".join(self._data)
            self._data, self._data_bytes = [], 0
            return data or None
        name, colon, value = line.partition(":")
        if name == "data":
            value = value[1:] if value.startswith(" ") else value
            self._data.append(value)
            self._data_bytes += len(value.encode("utf-8")) + 1
            if self._data_bytes > MAX_EVENT_BYTES + 1:
                raise TooLong
        return None
