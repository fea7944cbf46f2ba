"""What a retrieval plugin does with an untrusted question before the corpus sees it.

A port of turnstile's `plugins/query` crate (`retrieval_query`): the question's terms (stop words
dropped, bounded), an FTS5 expression in which every term is a quoted string -- so FTS5 syntax typed
by a user (`AND`, `NEAR`, `*`, `"`, `:`...) is inert -- and how well a document id names the
question's terms.

It must give the Rust crate's answers exactly, because the terms decide the bm25 pool and the
id-match bonus, and so the ranking. Where Python's `str` methods differ from Rust's `char`
methods the Rust behaviour is reproduced explicitly (see `is_alphanumeric`).
"""

from __future__ import annotations

import bisect
import re

from unicode_tables import ALNUM_ENDS, ALNUM_STARTS, DEBUG_ESCAPED_ENDS, DEBUG_ESCAPED_STARTS

#: Questions longer than this many terms are cut: a longer OR-expression only adds noise and cost.
MAX_TERMS = 32
#: Terms longer than this many characters (code points) are cut: a run of 500 letters with no
#: separator, as in Japanese text, is one "word". With MAX_TERMS this bounds the expression to
#: 6,332 bytes, within the host's 8 KiB and 64 terms.
MAX_TERM_CHARS = 48

#: English function words that carry no retrieval signal in a question (the crate's
#: `stop_words.rs`, same order).
STOP_WORDS = frozenset((
    "a", "about", "an", "and", "are", "as", "at", "be", "but", "by", "can", "could", "do", "does",
    "for", "from", "get", "how", "i", "if", "in", "into", "is", "it", "its", "me", "my", "of",
    "on", "or", "should", "so", "that", "the", "their", "them", "then", "there", "these", "this",
    "to", "use", "using", "was", "way", "we", "what", "when", "where", "which", "who", "why",
    "will", "with", "would", "you", "your",
))

# `str.translate` table folding ASCII letters only, as Rust's `eq_ignore_ascii_case` does.
_ASCII_LOWER = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")


def in_ranges(cp: int, starts: tuple[int, ...], ends: tuple[int, ...]) -> bool:
    """Whether code point `cp` is in one of the sorted ranges `starts[i]..=ends[i]`."""
    i = bisect.bisect_right(starts, cp) - 1
    return i >= 0 and cp <= ends[i]


def is_alphanumeric(ch: str) -> bool:
    """Rust's `char::is_alphanumeric` (Unicode Alphabetic or Numeric).

    Not `str.isalnum()`: that misses the Other_Alphabetic combining marks (a Hindi vowel sign would
    split a word in two) and Python 3.11's Unicode 14 misses newer letters. The table is generated
    from the Unicode data Rust uses (`tools/gen_unicode_tables.mjs`).
    """
    cp = ord(ch)
    if cp < 0x80:  # the common case, without a search
        return ch.isalnum()
    return in_ranges(cp, ALNUM_STARTS, ALNUM_ENDS)


def is_debug_escaped(ch: str) -> bool:
    """Whether Rust's `{:?}` of a string shows `ch` as `\\u{...}` (see unicode_tables)."""
    return in_ranges(ord(ch), DEBUG_ESCAPED_STARTS, DEBUG_ESCAPED_ENDS)


def _word_pattern() -> re.Pattern[str]:
    """A run of `_` and Rust alphanumerics (the ranges of `is_alphanumeric`) as one character
    class, so a question is split into words by the regex engine rather than a Python loop."""
    ranges = "".join(f"\\U{start:08x}-\\U{end:08x}" for start, end in zip(ALNUM_STARTS, ALNUM_ENDS))
    return re.compile(f"[_{ranges}]+")


#: The maximal runs of alphanumerics and `_`. Compiled here, at module level: componentize-py runs
#: this module once, at build time, and every call starts from that snapshot, so the expressions
#: are compiled once and for all, not per call.
_WORD = _word_pattern()
#: The same in an ASCII question, where Rust's alphanumerics are the ASCII letters and digits: a
#: small expression, where `_WORD`'s hundreds of ranges are searched for every other character.
_ASCII_WORD = re.compile("[0-9A-Za-z_]+")


def _words(question: str) -> list[str]:
    """The maximal runs of alphanumerics and `_` in `question`, in order."""
    return (_ASCII_WORD if question.isascii() else _WORD).findall(question)


def terms(question: str) -> list[str]:
    """Lowercased alphanumeric terms of `question`, stop words dropped (unless nothing else is
    left), deduplicated in order of appearance, at most MAX_TERMS."""
    # Lowercase first, then cut: lowercasing can change the length (`İ` is two code points
    # lowercased), and the crate cuts the lowercased word. Python's `lower` applies the
    # final-sigma rule within the word, as Rust's `to_lowercase` does. `dict.fromkeys` keeps the
    # first of each, in order.
    all_terms = list(dict.fromkeys(word.lower()[:MAX_TERM_CHARS] for word in _words(question)))
    content = [w for w in all_terms if w not in STOP_WORDS]
    chosen = content if content else all_terms
    return chosen[:MAX_TERMS]


def _ascii_folded(text: str) -> str:
    """`text` with its ASCII letters lowercased and nothing else (`str.lower` where that is the
    same, which is the C fast path)."""
    return text.lower() if text.isascii() else text.translate(_ASCII_LOWER)


def folded_terms(query_terms: list[str]) -> frozenset[str]:
    """The question's terms as `id_match_folded` compares them: ASCII case folded. Made once per
    question, not once per hit."""
    return frozenset(map(_ascii_folded, query_terms))


def id_match_folded(doc_id: str, folded: frozenset[str]) -> float:
    """`id_match` against terms already folded by `folded_terms`."""
    if doc_id.startswith("topic:"):
        doc_id = doc_id[len("topic:"):]
    score = 0.0
    # Folding the id once, before it is split, folds each segment: `.` and `_` are not letters.
    for segment in _ascii_folded(doc_id).replace("_", ".").split("."):
        if segment:
            score += 1.0 if segment in folded else -0.5
    return score


def id_match(doc_id: str, query_terms: list[str]) -> float:
    """How well a document id matches the question's terms: +1 for each id segment (split on `.`
    and `_`) that is a term, ignoring ASCII case, -0.5 for each that is not.

    `asyncio.Semaphore` matches "asyncio semaphore" better than `asyncio.Semaphore.locked` or
    `asyncio.BoundedSemaphore`. To score many ids against one question, fold its terms once
    (`folded_terms`) and call `id_match_folded`.
    """
    return id_match_folded(doc_id, folded_terms(query_terms))


def fts_expression(query_terms: list[str]) -> str | None:
    """An FTS5 expression that ORs every term as a quoted string, or None when there is no term."""
    if not query_terms:
        return None
    # Terms hold only alphanumerics and `_`, but double any quote anyway: that is FTS5's escape
    # inside a string, so the expression stays inert whatever the tokenizer does.
    return " OR ".join('"' + t.replace('"', '""') + '"' for t in query_terms)
