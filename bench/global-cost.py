"""What the global limit adds to a request: the benchmark question under `turnstile load` (16
users, --max-active 2), one server without Redis and one with `--redis-url` (a redis-server on
loopback started here, `--global-max-active` high enough that the global gate never queues),
each fresh, rounds A B A B. Then the three-replica plateau with the delay fixture against
theory.

    cargo build --release -p turnstile-cli && cargo xtask plugins
    python3 bench/global-cost.py [--rounds 2] [--seconds 15]
"""

import argparse
import json
import subprocess
import tempfile
import time
import urllib.request
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
BIN = str(REPO / "target" / "release" / "turnstile")


def free_port():
    import socket
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def ready(port):
    """Ready, and past the grace a fresh Redis opens (no lease for one TTL: docs/SCALE.md)."""
    for _ in range(1200):
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{port}/readyz", timeout=1)
            state = json.load(urllib.request.urlopen(f"http://127.0.0.1:{port}/state", timeout=5))
            if not state.get("global") or state["global"]["grace_ms"] == 0:
                return
        except OSError:
            pass
        time.sleep(0.1)
    raise SystemExit(f"server on {port} never ready")


def serve(work, port, extra):
    return subprocess.Popen(
        [BIN, "serve", "--listen", f"127.0.0.1:{port}", "--cache-dir", f"{work}/cache",
         "--access-log", "false"] + extra,
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def load(work, port, users, seconds, name):
    out = f"{work}/{name}"
    subprocess.run([BIN, "load", "--url", f"http://127.0.0.1:{port}/retrieve", "--users", str(users),
                    "--spawn-rate", "1000", "--duration", str(seconds), "--output", out, "--quiet"],
                   stdout=subprocess.DEVNULL, check=True)
    return json.load(open(f"{out}/summary.json"))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--seconds", type=int, default=15)
    parser.add_argument("--skip-cost", action="store_true", help="only the three-replica plateau")
    parser.add_argument("--json", default=str(REPO / "target" / "global-drive.json"),
                        help="where the three-replica run's results go")
    args = parser.parse_args()
    redis_port = free_port()
    redis = subprocess.Popen(["redis-server", "--bind", "127.0.0.1", "--port", str(redis_port),
                              "--save", "", "--appendonly", "no"], stdout=subprocess.DEVNULL)
    url = f"redis://127.0.0.1:{redis_port}"
    try:
        with tempfile.TemporaryDirectory() as work:
            print("| server | req/s | p50 ms | p99 ms |\n| --- | --- | --- | --- |")
            for round_ in range(1, 0 if args.skip_cost else args.rounds + 1):
                for label, extra in [("local gate only", []),
                                     ("local + global (Redis)", ["--redis-url", url, "--global-max-active", "64"])]:
                    port = free_port()
                    server = serve(work, port, ["--max-active", "2", "--max-waiting", "1000"] + extra)
                    try:
                        ready(port)
                        load(work, port, 16, 3, "warm")
                        s = load(work, port, 16, args.seconds, "out")
                        print(f"| {label} #{round_} | {s['requests'] / args.seconds:.1f} | "
                              f"{s['latency_ms']['p50']:.2f} | {s['latency_ms']['p99']:.2f} |", flush=True)
                    finally:
                        server.terminate()
                        server.wait()
            # Three replicas, global limit 4, calls of 0.5 s, 60 users spread over them.
            delay = str(REPO / "target" / "plugins" / "delay.wasm")
            ports = [free_port() for _ in range(3)]
            servers = [serve(work, p, ["--plugin", delay, "--plugin-config", "delay_ms=500",
                                       "--max-active", "20", "--max-waiting", "1000", "--wait-ms", "300000",
                                       "--redis-url", url, "--global-max-active", "4",
                                       "--global-key", "plateau"]) for p in ports]
            try:
                for p in ports:
                    ready(p)
                loads = [subprocess.Popen(
                    [BIN, "load", "--url", f"http://127.0.0.1:{p}/retrieve", "--users", "20",
                     "--spawn-rate", "1000", "--duration", "45", "--output", f"{work}/replica{i}", "--quiet"],
                    stdout=subprocess.DEVNULL) for i, p in enumerate(ports)]
                peak = 0
                while any(l.poll() is None for l in loads):
                    state = json.load(urllib.request.urlopen(f"http://127.0.0.1:{ports[0]}/state"))
                    peak = max(peak, state["global"]["holders"] or 0)
                    time.sleep(0.05)
                summaries = [json.load(open(f"{work}/replica{i}/summary.json")) for i in range(3)]
                plateau = sum(s["plateau"]["requests_per_s"] for s in summaries)
                result = {
                    "replicas": 3, "global_max_active": 4, "delay_ms": 500, "users": 60,
                    "theory_requests_per_s": 8.0, "plateau_requests_per_s": plateau,
                    "peak_global_holders": peak,
                    "per_replica": [{"plateau_requests_per_s": s["plateau"]["requests_per_s"],
                                     "statuses": s["statuses"], "latency_ms": s["latency_ms"]}
                                    for s in summaries],
                }
                Path(args.json).write_text(json.dumps(result, indent=2) + "\n")
                print(f"\nthree replicas, global limit 4, calls of 0.5 s, 60 users: plateau {plateau:.2f} req/s "
                      f"(theory 8.00), peak global holders {peak}; {args.json}")
            finally:
                for s in servers:
                    s.terminate()
                    s.wait()
    finally:
        redis.terminate()
        redis.wait()


if __name__ == "__main__":
    main()
