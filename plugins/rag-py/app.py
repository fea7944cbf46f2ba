"""turnstile's answering plugin in Python (contract turnstile:retrieval@0.1.4, with wasi:http).

A port of `plugins/rag` for componentize-py, answering as it does: the best sources from the
corpus (hybrid, as the default plugin finds them: the bm25 pool and the nearest-vector pool,
fused), told to the client at once (`answer.cite`), then an answer streamed from a model behind an
OpenAI-compatible `POST /v1/chat/completions`, reached through `wasi:http` -- only if the operator
granted its origin -- each content delta appended (`answer.append`) as its bytes arrive, and how
it ended (`answer.finish`). Its settings are rag's (`upstream`, `model`, `api_key`, `max_tokens`;
plugins/rag/README.md); without `upstream` it answers with sources only.

The ranking is `plugins/retrieval-py`'s own modules (`hybrid`, `retrieval_query`,
`unicode_tables`), imported from that folder (the build adds it to the Python path), not copied.
The component is built against the contract and the kit's outbound world
(`kit/templates/python/wit`: the contract's world with `wasi:http/outgoing-handler`), the WIT a
Python plugin author's project has. Files: this one (the component), `upstream.py` (the HTTP call),
`settings.py`, `prompt.py`, `sse.py`, `chunks.py`, `completion.py` (host-independent, tested
natively by test_rag.py).
"""

from __future__ import annotations

import traceback
from typing import Callable, NamedTuple, TypeVar

import wit_world
from componentize_py_types import Err
from wit_world import RetrieveError_Config, RetrieveError_Corpus, RetrieveError_Internal, Source
from wit_world.imports import answer, config, conversation, embeddings, log
from wit_world.imports.corpus import Neighbour, Ranked, Session

import prompt
import retrieval_query
import settings
import upstream
from chunks import Finish, part
from hybrid import ID_WEIGHT, LEXICAL_WEIGHT, POOL, debug_variant, fuse, rust_trim, text_snippet
from sse import Events

T = TypeVar("T")

# The cases of the export's error (`retrieve-error`).
RETRIEVE_ERRORS = (RetrieveError_Corpus, RetrieveError_Config, RetrieveError_Internal)
SPEAKERS = {
    conversation.Role.SYSTEM: prompt.Speaker.SYSTEM,
    conversation.Role.USER: prompt.Speaker.USER,
    conversation.Role.ASSISTANT: prompt.Speaker.ASSISTANT,
}
REASONS = {
    Finish.LENGTH: answer.FinishReason.LENGTH,
    Finish.CONTENT_FILTER: answer.FinishReason.CONTENT_FILTER,
}


class Settings(NamedTuple):
    """What the operator set: where to ask, and how."""

    upstream: settings.Upstream
    model: str
    key: str | None
    max_tokens: int


def read_settings() -> Settings | None:
    """The settings, or None when no `upstream` is set. Read before any work, so a wrong setting
    fails every call the same way."""
    where = config.get("upstream")
    if where is None:
        return None
    try:
        parsed = settings.upstream(where)
    except ValueError as error:
        raise Err(RetrieveError_Config(str(error))) from None
    model = config.get("model")
    if model is None or not rust_trim(model):
        raise Err(RetrieveError_Config("model: required with upstream"))
    try:
        max_tokens = settings.max_tokens(config.get("max_tokens"))
    except ValueError as error:
        raise Err(RetrieveError_Config(str(error))) from None
    # The weaker choice: a key the plugin holds. With `--outbound-bearer` the host adds it.
    key = config.get("api_key") or None
    return Settings(parsed, model, key, max_tokens)


class Found(NamedTuple):
    """A source with the text of its document (what the model reads)."""

    source: Source
    text: str


class WitWorld(wit_world.WitWorld):
    """The component's export: componentize-py instantiates this class by its generated name."""

    def retrieve(self, question: str, limit: int) -> list[Source]:
        # An exception escaping `retrieve` would trap without its message: every failure becomes
        # a `retrieve-error` here.
        try:
            return answer_question(question, limit)
        except Err as error:
            if isinstance(error.value, RETRIEVE_ERRORS):
                raise
            raise Err(RetrieveError_Internal(debug_variant(error.value))) from None
        except BaseException as error:  # noqa: BLE001 -- the boundary: nothing may escape
            raise Err(RetrieveError_Internal(describe(error))) from None


def answer_question(question: str, limit: int) -> list[Source]:
    chosen = read_settings()
    found = sources(question, limit)
    returned = [f.source for f in found]
    if chosen is None:
        return returned
    if not found:
        log.write(log.Level.DEBUG, "no sources: nothing to answer from")
        return returned
    # The sources before the model's first token: a chat client shows them while it writes.
    try:
        answer.cite([answer.Cited(id=s.id, title=s.title, snippet=s.snippet, score=s.score)
                     for s in returned])
    except Err as error:
        if isinstance(error.value, answer.StreamError_ClientGone):
            return returned
        log.write(log.Level.WARN, f"cite refused: {debug_variant(error.value)}")
    ask(chosen, question, found)
    return returned


def ask(chosen: Settings, question: str, found: list[Found]) -> None:
    """Asks the upstream, appending each piece of its answer as it arrives; the answer's end (or
    its failure) is told with `answer.finish`."""
    parameters = conversation.parameters()
    turns = [prompt.Turn(SPEAKERS[t.role], t.content) for t in conversation.history()]
    asked = prompt.Asked(
        max_tokens=settings.answer_tokens(parameters.max_tokens, chosen.max_tokens),
        temperature=parameters.temperature,
        stop=parameters.stop,
        user=parameters.user,
    )
    passages = [prompt.Passage(f.source.id, f.source.title, f.text) for f in found]
    body = prompt.request_body(chosen.model, asked, question, passages, turns)
    full = False

    def append(text: str) -> bool:
        nonlocal full
        try:
            answer.append(text)
            return True
        except Err as error:
            full = isinstance(error.value, answer.StreamError_TooLong)
            return False

    try:
        ended = upstream.ask(chosen.upstream, chosen.key, body, append)
    except upstream.Failure as failure:
        if failure.kind is upstream.Kind.CLIENT_GONE:
            if full:
                answer.finish(answer.FinishReason.LENGTH, None)
            # Else nobody reads the answer any more: return at once, so the slot goes back.
        elif failure.kind is upstream.Kind.DENIED:
            # Not granted, or conformance work (`turnstile check`, a swap's smoke checks): the
            # host's log says which.
            log.write(log.Level.WARN, "upstream request denied by the host: answering with sources only")
        elif failure.kind is upstream.Kind.BAD_KEY:
            # A key that cannot be a header value is a setting that does not parse.
            raise Err(RetrieveError_Config(failure.message)) from None
        else:
            # The sources stay; the host answers with the error the backend's signal names.
            log.write(log.Level.WARN, failure.message)
            answer.finish(answer.FinishReason.FAILED, None)
        return
    usage = None if ended.usage is None else answer.Usage(
        prompt_tokens=ended.usage[0], completion_tokens=ended.usage[1])
    answer.finish(REASONS.get(ended.finish, answer.FinishReason.STOP), usage)


def _corpus(call: Callable[..., T], *args: object) -> T:
    """`call(*args)`, a corpus call, with its CorpusError as the plugin's `corpus` error (the
    variant as the Rust plugin's `{:?}` writes it)."""
    try:
        return call(*args)
    except Err as error:
        raise Err(RetrieveError_Corpus(debug_variant(error.value))) from None


def sources(question: str, limit: int) -> list[Found]:
    """The best `limit` sources for `question`, best first, each with its document's text: the
    default plugin's hybrid ranking (bm25 pool and nearest-vector pool, fused)."""
    terms = retrieval_query.terms(question)
    expression = retrieval_query.fts_expression(terms)
    with _corpus(Session.open) as session:
        lexical: list[Ranked] = []
        lexical_scores: list[float] = []
        if expression is not None:
            lexical = _corpus(session.rank, expression, POOL)
            lexical_scores = lexical_pool_scores(lexical, terms)
        semantic: list[Neighbour] = []
        try:
            vectors = embeddings.embed([question])
        except Err as error:
            raise Err(RetrieveError_Internal(debug_variant(error.value))) from None
        if vectors:
            semantic = _corpus(session.nearest, vectors[0], POOL)
        semantic_scores = [near.similarity for near in semantic]
        found = []
        for score, hit, in_lexical in fuse(lexical, lexical_scores, semantic, semantic_scores,
                                           LEXICAL_WEIGHT, limit):
            document = _corpus(session.get, hit.id)
            text = document.text if document is not None else ""
            # The client's snippet shows where the question's terms are; the model reads the
            # whole passage.
            snippet = None
            if expression is not None and in_lexical:
                snippet = _corpus(session.snippet, expression, hit.doc)
            if snippet is None:
                snippet = text_snippet(text)
            found.append(Found(Source(id=hit.id, title=hit.title, snippet=snippet, score=score), text))
        return found


def lexical_pool_scores(hits: list[Ranked], terms: list[str]) -> list[float]:
    """The lexical pool's scores: bm25 (negated: higher is better) moved by how well each id names
    the terms."""
    folded = retrieval_query.folded_terms(terms)
    id_match = retrieval_query.id_match_folded
    return [-hit.rank * (1.0 + ID_WEIGHT * id_match(hit.id, folded)) for hit in hits]


def describe(error: BaseException) -> str:
    """`Type: message` and the frames it passed through (read from the frames: the component has
    no source files for `traceback.format_exc` to read)."""
    frames = [f"  at {frame.f_code.co_filename}:{line} in {frame.f_code.co_name}"
              for frame, line in traceback.walk_tb(error.__traceback__)]
    if len(frames) > 20:
        frames[4:-12] = [f"  ... {len(frames) - 16} more frames"]
    return "\n".join([f"{type(error).__name__}: {error}", *frames])


def _warm_up() -> None:
    """What every call runs, run once on made-up input at build time: componentize-py snapshots
    the interpreter after this module ran, so CPython's specialised bytecode is in the snapshot,
    not redone by every call."""
    hits = [Ranked(id=f"topic:warm_Up.{i}", title="", rank=-float(i), doc=i) for i in range(4)]
    near = [Neighbour(id=f"warm.{i}", title="", similarity=i / 4, doc=i) for i in range(1, 4)]
    terms = retrieval_query.terms("Warm up the answering code, once: café")
    retrieval_query.fts_expression(terms)
    scores = lexical_pool_scores(hits, terms)
    passages = [prompt.Passage(hit.id, hit.title, " warm up" * 50)
                for _, hit, _ in fuse(hits, scores, near, [n.similarity for n in near], LEXICAL_WEIGHT, 2)]
    prompt.request_body("model", prompt.Asked(max_tokens=64, temperature=0.5), "warm?", passages,
                        [prompt.Turn(prompt.Speaker.USER, "before")])
    settings.upstream("http://127.0.0.1:9/v1")
    settings.max_tokens(" 64 ")
    events = Events()
    for chunk in (b'data: {"choices":[{"index":0,"delta":{"content":"warm "},"finish_reason":null}]}\n\nda',
                  b'ta: {"choices":[],"usage":{"prompt_tokens":1,"completion_tokens":1}}\r\n\r\n'):
        for data in events.push(chunk):
            part(data)


_warm_up()
