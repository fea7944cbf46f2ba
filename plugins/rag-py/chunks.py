"""What one event of a streamed chat completion says (`chat.completion.chunk`, as OpenAI, vLLM,
TGI, Ollama and llama.cpp's server send them): the next piece of content, why the answer ended,
the token counts (the last chunk with `stream_options.include_usage`), or an error the upstream
reports in the stream. And the JSON reading the Rust plugin's serde_json does.

A port of `plugins/rag/src/chunk.rs`.
"""

from __future__ import annotations

import json
from enum import Enum
from typing import Any, NamedTuple

#: The end of the stream: `data: [DONE]`.
DONE = "[DONE]"

U32_MAX = 0xFFFF_FFFF


class Finish(Enum):
    """Why the model says its answer ended."""

    STOP = "stop"
    LENGTH = "length"
    CONTENT_FILTER = "content_filter"


class Part(NamedTuple):
    """One event, read."""

    #: The next piece of the answer (`choices[0].delta.content`), when not empty.
    content: str | None
    #: `choices[0].finish_reason`, when given.
    finish: Finish | None
    #: `usage`: prompt and completion tokens, when given.
    usage: tuple[int, int] | None


class NotJson(Exception):
    """Not JSON."""


class StreamError(Exception):
    """The upstream reported an error in the stream (`{"error": ...}`)."""


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def loads(text: str | bytes) -> Any:
    """JSON as serde_json reads it: UTF-8 only, no NaN or Infinity. Raises NotJson."""
    try:
        if isinstance(text, bytes):
            text = text.decode("utf-8")
        return json.loads(text, parse_constant=_no_constant)
    except ValueError:  # UnicodeDecodeError and JSONDecodeError are ValueErrors
        raise NotJson from None


def pointer(value: Any, path: str) -> Any:
    """serde_json's `Value::pointer`: `/choices/0/delta` walks objects by key and arrays by index;
    None where the path leads nowhere (or to `null`)."""
    for token in path.split("/")[1:]:
        if isinstance(value, dict):
            value = value.get(token)
        elif isinstance(value, list) and token.isdigit() and token.isascii() and (
                token == "0" or not token.startswith("0")) and int(token) < len(value):
            value = value[int(token)]
        else:
            return None
    return value


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def _count(value: Any) -> int | None:
    """serde_json's `as_u64`, held to a u32 as the Rust plugin holds it."""
    if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
        return min(value, U32_MAX)
    return None


def finish(reason: str) -> Finish:
    """A finish reason's meaning (`tool_calls` and unknown ones end it as `stop` does)."""
    if reason == "length":
        return Finish.LENGTH
    if reason == "content_filter":
        return Finish.CONTENT_FILTER
    return Finish.STOP


def usage(value: Any) -> tuple[int, int] | None:
    """A body's `usage` (a completion's, or a stream's last chunk's), when it has both counts."""
    counts = value.get("usage") if isinstance(value, dict) else None
    if not isinstance(counts, dict):
        return None
    prompt = _count(counts.get("prompt_tokens"))
    completion = _count(counts.get("completion_tokens"))
    return None if prompt is None or completion is None else (prompt, completion)


def part(data: str) -> Part:
    """Reads the data of one event. Raises NotJson or StreamError."""
    value = loads(data)
    if isinstance(value, dict) and value.get("error") is not None:
        raise StreamError
    choice = pointer(value, "/choices/0")
    content = _text(pointer(choice, "/delta/content")) or None
    reason = _text(choice.get("finish_reason")) if isinstance(choice, dict) else None
    return Part(content, None if reason is None else finish(reason), usage(value))
