"""Writes known_items.jsonl: a known-item check set made from the corpus alone, no question set.

Each line asks for one document by its own one-line description, the part of its title after
" — " ("Delete an entire directory tree" for shutil.rmtree), and expects that document's id. It
is the kind of question that uses the API's own words, where the lexical plugin is strongest
(recall@5 .98): the hybrid default must not fall below the lexical plugin on it
(tests/eval.rs), which is how the fusion weight is kept from trading exact-wording questions for
paraphrased ones.

300 documents, drawn with a fixed seed from those whose description has at least 4 words.
Usage: python3 make_known_items.py [CORPUS_JSONL] > known_items.jsonl
"""
import json
import random
import sys

SEED, COUNT, MIN_WORDS = 7, 300, 4


def main():
    path = sys.argv[1] if len(sys.argv) > 1 else "corpus/python-summaries.jsonl"
    with open(path) as f:
        docs = [json.loads(line) for line in f]
    random.seed(SEED)
    out = []
    for d in random.sample(docs, len(docs)):
        if " — " not in d["title"]:
            continue
        description = d["title"].split(" — ", 1)[1].strip().rstrip(".")
        if len(description.split()) < MIN_WORDS:
            continue
        out.append({"q": description, "expect": [d["id"]]})
        if len(out) == COUNT:
            break
    for item in out:
        print(json.dumps(item))


if __name__ == "__main__":
    main()
