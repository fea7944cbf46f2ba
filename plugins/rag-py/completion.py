"""An answer that came whole (an upstream that does not stream, whatever it was asked): a chat
completion's `choices[0].message.content`, why it ended and its usage.

A port of `plugins/rag/src/completion.rs`.
"""

from __future__ import annotations

from typing import NamedTuple

from chunks import Finish, NotJson, finish, loads, pointer, usage
from hybrid import rust_trim

#: The longest answer the host keeps, in bytes (`answer.append`'s bound).
MAX_ANSWER_BYTES = 64 * 1024


class Unreadable(Exception):
    """A 2xx body that gave no answer; the message is the plugin's error (no part of the body)."""


class Whole(NamedTuple):
    """A whole answer."""

    #: The content, at most MAX_ANSWER_BYTES of UTF-8.
    content: str
    #: Why it ended.
    finish: Finish | None
    #: Prompt and completion tokens.
    usage: tuple[int, int] | None


def whole(body: bytes) -> Whole:
    """The answer in a chat completion `body`. Raises Unreadable."""
    try:
        value = loads(body)
    except NotJson:
        raise Unreadable("upstream answered invalid JSON") from None
    content = pointer(value, "/choices/0/message/content")
    if not isinstance(content, str) or not rust_trim(content):
        raise Unreadable("upstream answered no content")
    encoded = content.encode("utf-8")
    if len(encoded) > MAX_ANSWER_BYTES:
        return Whole(cut(encoded, MAX_ANSWER_BYTES), Finish.LENGTH, usage(value))
    reason = pointer(value, "/choices/0/finish_reason")
    return Whole(content, finish(reason) if isinstance(reason, str) else None, usage(value))


def cut(encoded: bytes, most: int) -> str:
    """The longest prefix of UTF-8 `encoded` of at most `most` bytes that ends on a character
    boundary, as text."""
    end = min(most, len(encoded))
    while end > 0 and end < len(encoded) and (encoded[end] & 0xC0) == 0x80:
        end -= 1
    return encoded[:end].decode("utf-8")
