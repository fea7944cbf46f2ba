"""How many documents each question of a mix makes SQLite rank: the default plugin's terms (stop
words dropped), matched as any term (what it ranks today) and as all terms, over a corpus index
that `turnstile serve` built (in its cache directory, `index/corpus-*.sqlite`).

    python3 bench/match-counts.py ~/.cache/turnstile/index/corpus-*.sqlite bench/mix.jsonl
"""

import json
import re
import statistics
import sys
from pathlib import Path
import sqlite3

index, mix = sys.argv[1], sys.argv[2]
stop = set(re.findall(r'"([a-z]+)"', (Path(__file__).parent.parent / "plugins/retrieval/src/stop_words.rs").read_text()))
db = sqlite3.connect(f"file:{index}?mode=ro", uri=True)
rows = []
for line in open(mix):
    if not line.strip():
        continue
    words = []
    for w in re.split(r"[^\w]+", json.loads(line)["question"].lower()):
        if w and w not in words:
            words.append(w)
    terms = [w for w in words if w not in stop] or words
    if not terms:
        continue
    count = lambda op: db.execute("SELECT count(*) FROM docs WHERE docs MATCH ?",
                                  (f" {op} ".join(f'"{t}"' for t in terms),)).fetchone()[0]
    rows.append((count("OR"), count("AND"), len(terms)))
print(f"questions: {len(rows)}; terms per question: median {statistics.median(r[2] for r in rows)}")
print(f"documents matching any term: median {statistics.median(r[0] for r in rows)}, "
      f"mean {sum(r[0] for r in rows) / len(rows):.0f}, max {max(r[0] for r in rows)}")
print(f"documents matching all terms: median {statistics.median(r[1] for r in rows)}, "
      f"none for {sum(1 for r in rows if r[1] == 0)} questions, at least 20 for {sum(1 for r in rows if r[1] >= 20)}")
