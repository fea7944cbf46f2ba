"""The request the plugin sends: an OpenAI-compatible chat completion, streamed and bounded. Its
system message says to answer only from the sources and cite them by id; then the client's own
instructions and the most recent earlier turns of its conversation (within MAX_HISTORY_BYTES);
then the user message: each source numbered, with its id, title and text (the passage itself, not
a highlighted snippet), and the question. The client's parameters pass on within the operator's
bounds (`max_tokens` at most the setting's).

A port of `plugins/rag/src/prompt.rs`: a model is asked the same, whichever plugin asks.
"""

from __future__ import annotations

import json
import struct
from dataclasses import dataclass, field
from enum import Enum
from typing import NamedTuple

from hybrid import rust_trim

#: What the model is told to do with the sources (no corpus's own words: any documents).
SYSTEM = (
    "Answer the user's question using only the numbered sources in their message. After each "
    "statement, cite the sources it comes from by their id in square brackets, as in [id]. If the "
    "sources do not answer the question, say that they do not: do not use anything else you know."
)

#: Most bytes (UTF-8) of earlier turns sent (the most recent first kept).
MAX_HISTORY_BYTES = 32 * 1024


class Passage(NamedTuple):
    """One source as the model reads it."""

    #: The corpus id, which the answer cites.
    id: str
    #: The document's title.
    title: str
    #: The document's text.
    text: str


class Speaker(Enum):
    """Who said an earlier turn."""

    SYSTEM = "system"
    USER = "user"
    ASSISTANT = "assistant"


class Turn(NamedTuple):
    """An earlier turn of the conversation."""

    speaker: Speaker
    content: str


@dataclass
class Asked:
    """What the client asked of the answer, already held within the operator's bounds."""

    #: Tokens the answer may have.
    max_tokens: int
    #: Sampling temperature, if the client gave one.
    temperature: float | None = None
    #: Stop sequences.
    stop: list[str] = field(default_factory=list)
    #: The client's end user.
    user: str | None = None


def user_message(question: str, passages: list[Passage]) -> str:
    """The user message: each source numbered from 1 (id, title, text), then the question."""
    parts = ["Sources:\n"]
    for n, passage in enumerate(passages, 1):
        parts.append(f"\n[{n}] id: {passage.id}\ntitle: {passage.title}\n{rust_trim(passage.text)}\n")
    parts.append(f"\nQuestion: {question}")
    return "".join(parts)


def messages(question: str, passages: list[Passage], history: list[Turn]) -> list[dict]:
    """The messages: ours, the client's instructions, the recent turns, the sources and question."""
    out = [{"role": "system", "content": SYSTEM}]
    out.extend({"role": "system", "content": t.content} for t in history if t.speaker is Speaker.SYSTEM)
    # The most recent turns that fit, in their order.
    budget = MAX_HISTORY_BYTES
    kept: list[Turn] = []
    for turn in reversed([t for t in history if t.speaker is not Speaker.SYSTEM]):
        size = len(turn.content.encode("utf-8"))
        if size > budget:
            break
        budget -= size
        kept.append(turn)
    out.extend({"role": t.speaker.value, "content": t.content} for t in reversed(kept))
    out.append({"role": "user", "content": user_message(question, passages)})
    return out


def request_body(model: str, asked: Asked, question: str, passages: list[Passage],
                 history: list[Turn]) -> bytes:
    """The JSON body of the chat completion request: streamed, with the usage at its end."""
    body: dict = {
        "model": model,
        "messages": messages(question, passages, history),
        "max_tokens": asked.max_tokens,
        "stream": True,
        "stream_options": {"include_usage": True},
    }
    if asked.temperature is not None:
        body["temperature"] = f32(asked.temperature)
    if asked.stop:
        body["stop"] = asked.stop
    if asked.user is not None:
        body["user"] = asked.user
    return json.dumps(body, ensure_ascii=False, separators=(",", ":")).encode("utf-8")


def f32(value: float) -> float:
    """A WIT `f32` (given to Python widened, 0.7 as 0.699999988079071) as the shortest decimal that
    is the same `f32`, which is how the Rust plugin's JSON writes it (0.7)."""
    single = struct.unpack("<f", struct.pack("<f", value))[0]
    for digits in range(1, 10):
        shortest = float(f"{single:.{digits}g}")
        if struct.unpack("<f", struct.pack("<f", shortest))[0] == single:
            return shortest
    return single
