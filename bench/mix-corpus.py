"""A large corpus made from the shipped one by mixing passages, so that its documents are not
copies: document k joins the first half of one shipped document's sentences to the second half
of another's (a different pair for every k), under the first one's kind and a title naming both.
Ids are unique (`A+B#k`); every line keeps the corpus's bounds (text cut at 2,000 characters).

    python3 bench/mix-corpus.py 1000000 corpus/python-summaries.jsonl > /tmp/corpus-1m.jsonl
"""

import json
import re
import sys

count, source = int(sys.argv[1]), sys.argv[2]
documents = [json.loads(line) for line in open(source) if line.strip()]
n = len(documents)
SENTENCE = re.compile(r"(?<=[.!?])\s+")
halves = []
for d in documents:
    sentences = SENTENCE.split(d["text"])
    middle = max(1, len(sentences) // 2)
    halves.append((" ".join(sentences[:middle]), " ".join(sentences[middle:])))

out = sys.stdout
for k in range(count):
    a = k % n
    # A second document that changes with every pass over the corpus and never equals the first.
    b = (a + 1 + (k // n) * 7919) % n
    if b == a:
        b = (b + 1) % n
    first, second = halves[a][0], halves[b][1] or halves[b][0]
    text = (first + " " + second).strip()[:2000]
    title = f"{documents[a]['title'][:700]} / {documents[b]['id'][:300]}"
    out.write(
        json.dumps(
            {
                "id": f"{documents[a]['id'][:240]}+{documents[b]['id'][:240]}#{k}",
                "kind": documents[a]["kind"],
                "title": title,
                "text": text,
            },
            ensure_ascii=False,
        )
    )
    out.write("\n")
