"""The host-independent part of the hybrid retrieval plugin: fusion, settings, snippets, messages.

A port of `plugins/retrieval-hybrid/src/lib.rs` (everything outside its `guest` module), kept free
of the generated bindings so it runs natively under `python3 -m unittest` (test_hybrid.py).

Two candidate pools -- the bm25 pool of the question's terms, re-ranked by how well each id names
the terms, and the pool of documents nearest the question's embedding -- are fused by score: a
weighted sum of the pool-normalised lexical score and the cosine similarity (docs/RETRIEVAL.md).
"""

from __future__ import annotations

import math
import re
import struct
from typing import Protocol, Sequence, TypeVar

from retrieval_query import is_debug_escaped
from unicode_tables import WHITE_SPACE

#: Candidates taken from each pool, whatever `limit` is (the host's most): the fused ranking does
#: not depend on `limit`, so a `limit: k` answer is the first k of a `limit: 20` answer.
POOL = 50
#: How much naming the object (segments of its id) moves a lexical candidate, relative to bm25.
ID_WEIGHT = 0.2
#: The lexical score's weight in the fusion (the semantic score has the rest); the Rust plugin's
#: default, chosen by the sweep in docs/RETRIEVAL.md.
LEXICAL_WEIGHT = 0.15
#: Longest snippet (in UTF-8 bytes) made from a document's text when the question's terms do not
#: occur in it.
TEXT_SNIPPET_BYTES = 300

_ELLIPSIS = "\u2026"
_ELLIPSIS_BYTES = len(_ELLIPSIS.encode("utf-8"))
# What Rust's `str::parse::<f64>` accepts, less `inf`/`nan` (which are outside 0..=1 anyway).
# ASCII digits only: Python's `float` would also take other scripts' digits and `_` separators.
_FLOAT = re.compile(r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")


class Hit(Protocol):
    """A document one pool found: what `fuse` reads of the host's `Ranked` and `Nearest` records
    (the pools are passed as the host's own objects, with their scores beside them, rather than
    copied into objects of the plugin's)."""

    id: str
    doc: int


def rust_trim(text: str) -> str:
    """Rust's `str::trim`: strips Unicode White_Space (Python's `strip()` also strips \\x1c-\\x1f)."""
    return text.strip(WHITE_SPACE)


def lexical_weight(value: str) -> float:
    """The `lexical_weight` setting: a number in 0..=1. Raises ValueError with the operator's
    message otherwise (the Rust plugin's wording)."""
    text = rust_trim(value)
    if _FLOAT.fullmatch(text):
        weight = float(text)
        if 0.0 <= weight <= 1.0:
            return weight
    raise ValueError(f"lexical_weight must be a number in 0..=1, not {debug_str(value)}")


#: Flips the magnitude bits of a negative double's bit pattern (`f64::total_cmp`'s key).
_MAGNITUDE = 0x7FFF_FFFF_FFFF_FFFF

H = TypeVar("H", bound=Hit)


def _descending_keys(scores: Sequence[float]) -> list[int]:
    """For each score, an int that sorts it best first in the order of Rust's `f64::total_cmp`
    (-0.0 below +0.0, NaN above +inf): Rust sorts the fused list with it, so ties between 0.0 and
    -0.0 (weight 1: `0 × -0.3`) go as in Rust. All scores are read as bits in one `struct` call."""
    count = len(scores)
    bits = struct.unpack(f"<{count}q", struct.pack(f"<{count}d", *scores))
    return [-(b ^ _MAGNITUDE) if b < 0 else -b for b in bits]


def fuse(
    lexical: Sequence[H],
    lexical_scores: Sequence[float],
    semantic: Sequence[H],
    semantic_scores: Sequence[float],
    weight: float,
    limit: int | None = None,
) -> list[tuple[float, H, bool]]:
    """Both pools fused, best first (ties by id): `(score, hit, in the lexical pool)`, the first
    `limit` of them (all without one). Each pool is its hits and, beside them, their scores in
    that pool (higher is better).

    `weight × lexical + (1 - weight) × semantic`, where the lexical score is divided by the pool's
    best (so the best lexical hit scores 1; a document outside the pool matched no term and scores
    0) and the semantic score is the cosine similarity (a document outside the semantic pool is at
    most as similar as the pool's last, and gets that).
    """
    isfinite = math.isfinite
    best = max(max(filter(isfinite, lexical_scores), default=0.0), 0.0)
    floor = min(filter(isfinite, semantic_scores), default=math.inf)
    if not isfinite(floor):
        floor = 0.0
    rest = 1.0 - weight

    # The semantic score of the first semantic hit of each document (the Rust code's `find`):
    # built from the end, so the first of a document is the one left.
    semantic_docs = [h.doc for h in semantic]
    similarity_by_doc = dict(zip(reversed(semantic_docs), reversed(semantic_scores)))
    lexical_docs = [h.doc for h in lexical]
    in_lexical = set(lexical_docs)

    hits: list[H] = []
    scores: list[float] = []
    for hit, doc, score in zip(lexical, lexical_docs, lexical_scores):
        near = similarity_by_doc.get(doc)
        if near is None:
            similarity = floor
        else:
            similarity = near if isfinite(near) else floor
        value = max(score / best, 0.0) if best > 0.0 and isfinite(score) else 0.0
        hits.append(hit)
        scores.append(weight * value + rest * similarity)
    lexical_count = len(hits)
    for hit, doc, score in zip(semantic, semantic_docs, semantic_scores):
        if doc not in in_lexical:
            hits.append(hit)
            scores.append(rest * (score if isfinite(score) else floor))
    # Sorted by (key, id, position): Python compares str by code point, which is the byte order
    # of UTF-8 that Rust's `String` comparison uses, and the position keeps equal pairs in their
    # order, as Rust's stable `sort_by` does.
    order = sorted(zip(_descending_keys(scores), [h.id for h in hits], range(len(hits))))
    if limit is not None:
        order = order[:limit]
    return [(scores[i], hits[i], i < lexical_count) for _, _, i in order]


def text_snippet(text: str) -> str:
    """The start of a document's text, at most TEXT_SNIPPET_BYTES of UTF-8, cut on a character
    boundary and marked with an ellipsis."""
    text = rust_trim(text)
    encoded = text.encode("utf-8")
    if len(encoded) <= TEXT_SNIPPET_BYTES:
        return text
    end = TEXT_SNIPPET_BYTES - _ELLIPSIS_BYTES
    while end > 0 and (encoded[end] & 0xC0) == 0x80:  # a continuation byte: not a boundary
        end -= 1
    return encoded[:end].decode("utf-8") + _ELLIPSIS


_DEBUG_ESCAPES = {"\t": "\\t", "\r": "\\r", "\n": "\\n", "\\": "\\\\", '"': '\\"', "\0": "\\0"}


def debug_str(text: str) -> str:
    """`text` quoted and escaped as Rust's `{:?}` shows a string, so messages read as the Rust
    plugin's do."""
    out = ['"']
    for ch in text:
        if ch in _DEBUG_ESCAPES:
            out.append(_DEBUG_ESCAPES[ch])
        elif is_debug_escaped(ch):
            out.append(f"\\u{{{ord(ch):x}}}")
        else:
            out.append(ch)
    out.append('"')
    return "".join(out)


def debug_variant(value: object) -> str:
    """A WIT variant value from componentize-py (`CorpusError_BadExpression("...")`) as the Rust
    plugin's `{:?}` shows its wit-bindgen counterpart: `CorpusError::BadExpression("...")`."""
    type_name, _, case = type(value).__name__.partition("_")
    name = f"{type_name}::{case}" if case else type_name
    if hasattr(value, "value"):
        payload = value.value
        shown = debug_str(payload) if isinstance(payload, str) else repr(payload)
        return f"{name}({shown})"
    return name
