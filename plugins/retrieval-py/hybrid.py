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
from dataclasses import dataclass

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
# What Rust's `str::parse::<f64>` accepts, less `inf`/`nan` (which are outside 0..=1 anyway).
# ASCII digits only: Python's `float` would also take other scripts' digits and `_` separators.
_FLOAT = re.compile(r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")


@dataclass
class Candidate:
    """A document one pool found, with that pool's score (higher is better)."""

    id: str
    title: str
    doc: int
    score: float
    #: Whether the lexical pool has it (it matches the question's terms).
    lexical: bool = False


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


def _total_order(x: float) -> int:
    """The key of Rust's `f64::total_cmp`: -0.0 sorts below +0.0 and NaN above +inf. Rust sorts
    the fused list with it, so ties between 0.0 and -0.0 (weight 1: `0 × -0.3`) go as in Rust."""
    bits = struct.unpack("<q", struct.pack("<d", x))[0]
    return bits ^ 0x7FFF_FFFF_FFFF_FFFF if bits < 0 else bits


def fuse(lexical: list[Candidate], semantic: list[Candidate], weight: float) -> list[tuple[float, Candidate]]:
    """Both pools fused, best first (ties by id).

    `weight × lexical + (1 - weight) × semantic`, where the lexical score is divided by the pool's
    best (so the best lexical hit scores 1; a document outside the pool matched no term and scores
    0) and the semantic score is the cosine similarity (a document outside the semantic pool is at
    most as similar as the pool's last, and gets that).
    """
    best = max((c.score for c in lexical if math.isfinite(c.score)), default=0.0)
    best = max(best, 0.0)
    floor = min((c.score for c in semantic if math.isfinite(c.score)), default=math.inf)
    if not math.isfinite(floor):
        floor = 0.0

    def lexical_score(c: Candidate) -> float:
        if best > 0.0 and math.isfinite(c.score):
            return max(c.score / best, 0.0)
        return 0.0

    def semantic_score(c: Candidate) -> float:
        return c.score if math.isfinite(c.score) else floor

    # The first semantic candidate of each document (the Rust code's `find`).
    semantic_by_doc: dict[int, Candidate] = {}
    for c in semantic:
        semantic_by_doc.setdefault(c.doc, c)
    lexical_docs = {c.doc for c in lexical}

    fused: list[tuple[float, Candidate]] = []
    for c in lexical:
        near = semantic_by_doc.get(c.doc)
        similarity = semantic_score(near) if near is not None else floor
        fused.append((weight * lexical_score(c) + (1.0 - weight) * similarity, c))
    for c in semantic:
        if c.doc not in lexical_docs:
            fused.append(((1.0 - weight) * semantic_score(c), c))
    # Python compares str by code point, which is the byte order of UTF-8 that Rust's `String`
    # comparison uses. The sort is stable, as Rust's `sort_by`.
    fused.sort(key=lambda pair: (-_total_order(pair[0]), pair[1].id))
    return fused


def text_snippet(text: str) -> str:
    """The start of a document's text, at most TEXT_SNIPPET_BYTES of UTF-8, cut on a character
    boundary and marked with an ellipsis."""
    text = rust_trim(text)
    encoded = text.encode("utf-8")
    if len(encoded) <= TEXT_SNIPPET_BYTES:
        return text
    end = TEXT_SNIPPET_BYTES - len(_ELLIPSIS.encode("utf-8"))
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
