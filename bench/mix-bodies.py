"""Writes a question mix for `turnstile load --bodies` and `loadtest/mix.lua`: one /retrieve body
per line, `{"question": Q, "limit": 5}`, from a question set in the format of
../shared/eval/dev_questions.jsonl (`{"q": ..., "expect": [...]}`).

    python3 bench/mix-bodies.py ../shared/eval/dev_questions.jsonl > bench/mix.jsonl
"""

import json
import sys

for line in open(sys.argv[1]):
    if line.strip():
        print(json.dumps({"question": json.loads(line)["q"], "limit": 5}))
