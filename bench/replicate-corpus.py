"""A larger corpus for the cost-versus-corpus-size benchmark: the shipped corpus replicated N
times, ids suffixed `_vK` (K = 1..N), every other field unchanged.

    python3 bench/replicate-corpus.py 16 corpus/python-summaries.jsonl > /tmp/corpus-16x.jsonl
    turnstile serve --corpus /tmp/corpus-16x.jsonl ...
"""

import json
import sys

copies, source = int(sys.argv[1]), sys.argv[2]
documents = [json.loads(line) for line in open(source) if line.strip()]
for k in range(1, copies + 1):
    for document in documents:
        print(json.dumps({**document, "id": f"{document['id']}_v{k}"}, ensure_ascii=False))
