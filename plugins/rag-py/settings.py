"""The operator's settings, parsed: where the model is (`upstream`) and how long its answer may be
(`max_tokens`). The model's name and the key are taken as they are.

A port of `plugins/rag/src/settings.rs`: the same rules, the same messages.
"""

from __future__ import annotations

import re
from typing import NamedTuple

from hybrid import rust_trim
from unicode_tables import WHITE_SPACE

#: The path every OpenAI-compatible server answers chat completions on, after the upstream's own.
COMPLETIONS_PATH = "/v1/chat/completions"
#: `max_tokens` when the operator sets none.
DEFAULT_MAX_TOKENS = 256
#: The largest `max_tokens` taken: the answer is cut at 64 KiB anyway.
MAX_MAX_TOKENS = 8192

# What Rust's `str::parse::<u32>` reads: ASCII digits after an optional `+` (Python's `int` would
# also take `_` separators and other scripts' digits).
_U32 = re.compile(r"\+?[0-9]+")
_ASCII_LOWER = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")


class Upstream(NamedTuple):
    """Where the completions are asked for: `scheme://authority` plus the path to POST to."""

    #: `https` (else `http`).
    https: bool
    #: `host[:port]`.
    authority: str
    #: The upstream's own path prefix (if any) and COMPLETIONS_PATH.
    path: str


def _refused_in_upstream(char: str) -> bool:
    """Rust's `is_whitespace() || is_control()`, and the characters that would start a query, a
    fragment or a Windows path."""
    code = ord(char)
    return char in WHITE_SPACE or code < 0x20 or 0x7F <= code <= 0x9F or char in "?#\\"


def upstream(value: str) -> Upstream:
    """The `upstream` setting: `http://HOST[:PORT]` or `https://...`, optionally with a path prefix
    (`https://example.com/openai` posts to `/openai/v1/chat/completions`). Raises ValueError naming
    what is wrong, never the value (it could carry credentials)."""
    value = rust_trim(value)
    lower = value.translate(_ASCII_LOWER)
    if lower.startswith("https://"):
        https, rest = True, value[len("https://"):]
    elif lower.startswith("http://"):
        https, rest = False, value[len("http://"):]
    else:
        raise ValueError("upstream: must start with http:// or https://")
    slash = rest.find("/")
    authority, prefix = (rest, "") if slash < 0 else (rest[:slash], rest[slash:])
    if not authority:
        raise ValueError("upstream: names no host")
    if "@" in authority:
        raise ValueError("upstream: must not carry credentials (bind them with --outbound-bearer)")
    if any(map(_refused_in_upstream, rest)):
        raise ValueError("upstream: an origin and an optional path, no query, fragment or spaces")
    return Upstream(https, authority, prefix.rstrip("/") + COMPLETIONS_PATH)


def answer_tokens(client: int | None, operator: int) -> int:
    """The tokens an answer may have: what the client asked, at most the operator's `max_tokens`."""
    return operator if client is None else min(max(client, 1), operator)


def max_tokens(value: str | None) -> int:
    """The `max_tokens` setting: 1..=MAX_MAX_TOKENS, DEFAULT_MAX_TOKENS when absent. Raises
    ValueError otherwise."""
    if value is None:
        return DEFAULT_MAX_TOKENS
    text = rust_trim(value)
    if _U32.fullmatch(text) and 1 <= int(text) <= MAX_MAX_TOKENS:
        return int(text)
    raise ValueError(f"max_tokens: a whole number in 1..={MAX_MAX_TOKENS}")
