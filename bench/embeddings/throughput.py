#!/usr/bin/env python3
"""Throughput of an OpenAI-compatible embeddings endpoint, in passages per second.

Posts the first --limit passages of a corpus (JSON Lines with id, title, text; each passage is
the string "{id} {title} {text}") in batches of --batch, with --in-flight requests outstanding
(one keep-alive connection each), and prints one summary line (and --json for a JSON one).

    python3 bench/embeddings/throughput.py --url http://127.0.0.1:PORT --batch 64 --in-flight 2 --limit 640

Stdlib only. --model defaults to the first model the server lists at /v1/models.
"""
import argparse
import http.client
import json
import os
import statistics
import sys
import threading
import time
from urllib.parse import urlsplit

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def connect(url):
    u = urlsplit(url)
    return http.client.HTTPConnection(u.hostname, u.port or 80, timeout=600)


def call(conn, method, path, body=None):
    headers = {"Content-Type": "application/json"} if body is not None else {}
    conn.request(method, path, body=body, headers=headers)
    r = conn.getresponse()
    data = r.read()
    if r.status != 200:
        raise SystemExit(f"{method} {path}: HTTP {r.status}: {data[:500]!r}")
    return json.loads(data)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--url", required=True, help="server base URL, e.g. http://127.0.0.1:8000")
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--in-flight", type=int, default=1)
    ap.add_argument("--limit", type=int, default=640, help="passages to embed")
    ap.add_argument("--corpus", default=os.path.join(ROOT, "corpus", "python-summaries.jsonl"))
    ap.add_argument("--model", help="model name to send (default: the server's first)")
    ap.add_argument("--json", action="store_true", help="also print the result as one JSON line")
    a = ap.parse_args()

    base = urlsplit(a.url).path.rstrip("/")
    if base.endswith("/v1/embeddings"):
        base = base[: -len("/v1/embeddings")]
    texts = []
    with open(a.corpus, encoding="utf-8") as f:
        for line in f:
            if len(texts) >= a.limit:
                break
            r = json.loads(line)
            texts.append(f"{r['id']} {r['title']} {r['text']}")
    model = a.model or call(connect(a.url), "GET", base + "/v1/models")["data"][0]["id"]
    batches = [texts[i:i + a.batch] for i in range(0, len(texts), a.batch)]
    bodies = [json.dumps({"model": model, "input": b, "encoding_format": "float"}).encode() for b in batches]

    lock = threading.Lock()
    next_batch = [0]
    latencies, tokens, dims = [], [0], set()

    def worker():
        conn = connect(a.url)
        while True:
            with lock:
                i = next_batch[0]
                next_batch[0] += 1
            if i >= len(bodies):
                break
            t = time.perf_counter()
            resp = call(conn, "POST", base + "/v1/embeddings", bodies[i])
            dt = time.perf_counter() - t
            if len(resp["data"]) != len(batches[i]):
                raise SystemExit(f"batch {i}: {len(resp['data'])} vectors for {len(batches[i])} inputs")
            with lock:
                latencies.append(dt)
                tokens[0] += resp["usage"]["prompt_tokens"]
                dims.update(len(d["embedding"]) for d in resp["data"])
        conn.close()

    threads = [threading.Thread(target=worker) for _ in range(a.in_flight)]
    t0 = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    wall = time.perf_counter() - t0
    if len(latencies) != len(bodies):
        sys.exit("some requests failed")
    res = {
        "model": model, "passages": len(texts), "requests": len(bodies), "batch": a.batch,
        "in_flight": a.in_flight, "seconds": round(wall, 3), "passages_per_s": round(len(texts) / wall, 2),
        "tokens_per_s": round(tokens[0] / wall, 1), "latency_mean_s": round(statistics.mean(latencies), 3),
        "latency_max_s": round(max(latencies), 3), "dims": sorted(dims),
    }
    print(f"{model}: {res['passages']} passages, batch {a.batch}, {a.in_flight} in flight: "
          f"{res['passages_per_s']} passages/s ({res['tokens_per_s']} tokens/s) in {res['seconds']} s; "
          f"request latency mean {res['latency_mean_s']} s, max {res['latency_max_s']} s")
    if a.json:
        print(json.dumps(res))


if __name__ == "__main__":
    main()
