#!/usr/bin/env python3
"""What a remote model adds to a question (issue 50's goal: no more than the embedding server's
own time plus 1 ms).

    python3 bench/embeddings/question-cost.py [--bin target/release/turnstile] [--questions 300]

Starts the tests' embeddings server (`tests/upstream/embeddings.py`: a hashing model that answers
in well under a millisecond, so what is measured is turnstile's share, not a model's) and two
`turnstile serve` processes on the shipped corpus: one with the built-in model, one with
`--embeddings` naming that server (question cache off, every question new). Then, one at a time
and alternating, each question is asked of both servers (`POST /retrieve`, the hybrid default)
and of the embeddings server directly (one text, as turnstile sends it). Prints the medians and
what the remote model adds beyond the server's own time:

    added = median(remote /retrieve) - median(built-in /retrieve) - median(server alone)

(the built-in model's own embedding, a few microseconds, is inside the second term).
"""
import argparse
import http.client
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def start(cmd, ready, env=None):
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)
    deadline = time.time() + 600
    lines = []
    while time.time() < deadline:
        line = proc.stdout.readline()
        if not line:
            break
        lines.append(line)
        found = ready(line)
        if found:
            return proc, found
    proc.kill()
    sys.exit("did not start: " + "".join(lines[-20:]))


def post(conn, path, body):
    data = json.dumps(body).encode()  # bytes: sent with the headers in one write (no Nagle stall)
    started = time.perf_counter()
    conn.request("POST", path, data, {"Content-Type": "application/json"})
    response = conn.getresponse()
    payload = response.read()
    took = time.perf_counter() - started
    if response.status != 200:
        sys.exit(f"{path}: {response.status} {payload[:200]!r}")
    return took * 1e3


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--bin", default=os.path.join(ROOT, "target/release/turnstile"))
    parser.add_argument("--questions", type=int, default=300)
    args = parser.parse_args()

    embed, origin = start(
        [sys.executable, os.path.join(ROOT, "tests/upstream/embeddings.py"), "--port", "0", "--dims", "256"],
        lambda l: l.strip().removeprefix("listening on ") if l.startswith("listening on ") else None,
    )
    cache = tempfile.mkdtemp(prefix="question-cost-")

    def serve(extra):
        def ready(line):
            if "listening" in line and "http://" in line:
                for word in line.replace('"', " ").split():
                    if word.startswith("http://127.0.0.1:"):
                        return word.rstrip(",/")
            return None

        env = dict(os.environ, RUST_LOG="warn,turnstile_server=info")
        return start(
            [args.bin, "serve", "--listen", "127.0.0.1:0", "--cache-dir", cache, "--max-active", "1", *extra],
            ready,
            env,
        )

    builtin, builtin_url = serve([])
    remote, remote_url = serve(["--embeddings", origin, "--embeddings-model", "hashing-256",
                                "--embeddings-question-cache", "0"])
    conns = {}
    for name, url in (("builtin", builtin_url), ("remote", remote_url), ("server", origin)):
        host, port = url.removeprefix("http://").split(":")
        conns[name] = http.client.HTTPConnection(host, int(port))
    times = {"builtin": [], "remote": [], "server": []}
    try:
        for i in range(args.questions + 20):
            q = f"how do I read file number {i} line by line with encoding utf8"
            t = {
                "builtin": post(conns["builtin"], "/retrieve", {"question": q}),
                "remote": post(conns["remote"], "/retrieve", {"question": q + " again"}),
                "server": post(conns["server"], "/v1/embeddings",
                               {"model": "hashing-256", "input": [q + " alone"], "encoding_format": "float"}),
            }
            if i >= 20:  # warm-up
                for k, v in t.items():
                    times[k].append(v)
    finally:
        for proc in (builtin, remote, embed):
            proc.terminate()
    med = {k: statistics.median(v) for k, v in times.items()}
    added = med["remote"] - med["builtin"] - med["server"]
    print(f"questions: {args.questions} (each server one at a time, alternating)")
    for k in ("builtin", "remote", "server"):
        print(f"  median {k:8} {med[k]:7.3f} ms   p90 {statistics.quantiles(times[k], n=10)[-1]:7.3f} ms")
    print(f"added by the remote model beyond the server's own time: {added:+.3f} ms (goal: <= 1 ms)")


if __name__ == "__main__":
    main()
