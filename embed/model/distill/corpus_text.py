"""The corpus's training texts, formatted the same way for targets.py and tokenlearn.py.

A document is embedded as "{id} {title} {text}", as the corpus index does (corpus/src/vectors.rs).
Its title alone and its first sentence are extra training texts: short, query-like inputs.
"""
import json
import re

FIRST_SENTENCE = re.compile(r"(.+?[.!?])(\s|$)")


def load_docs(path):
    with open(path) as f:
        return [json.loads(line) for line in f]


def doc_text(d):
    return f"{d['id']} {d['title']} {d['text']}"


def title(d):
    return d["title"]


def first_sentence(d):
    """Up to the first '.', '!' or '?' followed by a space or the end (whole text if none),
    whitespace collapsed, at most 300 characters."""
    t = " ".join(d["text"].split())
    m = FIRST_SENTENCE.match(t)
    return (m.group(1) if m else t)[:300]


# Training texts and the file holding each one's MPNet targets (written by targets.py).
TEXTS = {"docs": doc_text, "titles": title, "sentences": first_sentence}
