#!/usr/bin/env python3
"""turnstile's OpenAI-compatible routes through the real OpenAI Python SDK (pinned in
tests/requirements.txt), as an application would use them; `tests/chat.rs` runs it against a
real server and checks what it prints.

    target/test-venv/bin/python tests/openai/client.py BASE_URL MODEL QUESTION

prints one JSON document: the models listed, a whole completion, a streamed one (each content
delta with the time it arrived, where the sources came, the usage), and the errors the SDK
raised for an unknown model and a bad request. The SDK retries nothing here (`max_retries=0`):
the test sees every status as it came.
"""

import json
import sys
import time

import openai
from openai import OpenAI


def main():
    base, model, question = sys.argv[1], sys.argv[2], sys.argv[3]
    client = OpenAI(base_url=f"{base}/v1", api_key="not-needed", max_retries=0, timeout=30)
    out = {"models": [m.id for m in client.models.list()]}

    whole = client.chat.completions.create(
        model=model,
        messages=[
            {"role": "system", "content": "Answer briefly."},
            {"role": "user", "content": question},
        ],
        max_completion_tokens=64,
        temperature=0.2,
        user="sdk-test",
    )
    extra = whole.model_extra or {}
    out["whole"] = {
        "id": whole.id,
        "object": whole.object,
        "content": whole.choices[0].message.content,
        "role": whole.choices[0].message.role,
        "finish_reason": whole.choices[0].finish_reason,
        "usage": whole.usage.model_dump() if whole.usage else None,
        "sources": [s["id"] for s in extra.get("sources", [])],
    }

    started = time.monotonic()
    stream = client.chat.completions.create(
        model=model,
        messages=[{"role": "user", "content": question}],
        stream=True,
        stream_options={"include_usage": True},
    )
    deltas, sources_at, first_sources, usage, finish, ids, role = [], None, [], None, None, set(), None
    for n, chunk in enumerate(stream):
        ids.add(chunk.id)
        extra = chunk.model_extra or {}
        if extra.get("sources") is not None and sources_at is None:
            sources_at = n
            first_sources = [s["id"] for s in extra["sources"]]
        if chunk.usage is not None:
            usage = chunk.usage.model_dump()
        for choice in chunk.choices:
            if choice.delta.role:
                role = choice.delta.role
            if choice.delta.content:
                deltas.append({"at": time.monotonic() - started, "text": choice.delta.content, "chunk": n})
            if choice.finish_reason:
                finish = choice.finish_reason
    out["stream"] = {
        "deltas": deltas,
        "sources_at_chunk": sources_at,
        "sources": first_sources,
        "usage": usage,
        "finish_reason": finish,
        "ids": len(ids),
        "role": role,
    }

    errors = {}
    try:
        client.chat.completions.create(model="gpt-4o", messages=[{"role": "user", "content": question}])
    except openai.NotFoundError as e:
        errors["unknown_model"] = {"status": e.status_code, "code": e.code, "param": e.param}
    try:
        client.chat.completions.create(model=model, messages=[])
    except openai.BadRequestError as e:
        errors["no_messages"] = {"status": e.status_code, "code": e.code, "param": e.param}
    out["errors"] = errors
    print(json.dumps(out))


if __name__ == "__main__":
    main()
