"""What the live view costs /retrieve: the benchmark question under `turnstile load` (16 users,
max_active 2) with 0, 1, 10 and 100 `/events` subscribers reading the stream, each server fresh,
rounds A B A B. Optionally a second binary (one without the live view) for the 0-subscriber
baseline side by side.

    cargo build --release -p turnstile-cli
    python3 bench/live-cost.py [--baseline OLD_BINARY] [--subscribers 0,1,10,100] [--rounds 2]

Prints, per run: requests/s, p50 and p99 (ms), the server's CPU per request (ms, from
/proc/PID/stat), and the bytes/s each subscriber received.
"""

import argparse
import json
import os
import socket
import subprocess
import tempfile
import threading
import time
import urllib.request
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
TICK = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid):
    fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICK


class Subscriber(threading.Thread):
    def __init__(self, port):
        super().__init__(daemon=True)
        self.port, self.bytes, self.stop = port, 0, False

    def run(self):
        s = socket.create_connection(("127.0.0.1", self.port))
        s.sendall(b"GET /events HTTP/1.1\r\nHost: localhost\r\n\r\n")
        s.settimeout(1)
        while not self.stop:
            try:
                chunk = s.recv(65536)
            except socket.timeout:
                continue
            if not chunk:
                break
            self.bytes += len(chunk)
        s.close()


def run(binary, label, subscribers, port, work, seconds):
    server = subprocess.Popen(
        [binary, "serve", "--listen", f"127.0.0.1:{port}", "--cache-dir", f"{work}/cache",
         "--max-active", "2", "--max-waiting", "1000", "--access-log", "false"]
        + (["--max-subscribers", "1000"] if subscribers else []),
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        for _ in range(600):
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{port}/readyz", timeout=1)
                break
            except OSError:
                time.sleep(0.1)
        subs = [Subscriber(port) for _ in range(subscribers)]
        for s in subs:
            s.start()
        load = [binary, "load", "--url", f"http://127.0.0.1:{port}/retrieve", "--users", "16",
                "--spawn-rate", "1000", "--quiet"]
        subprocess.run(load + ["--duration", "3", "--output", f"{work}/warm"],
                       stdout=subprocess.DEVNULL, check=True)
        cpu0, got0, t0 = cpu_seconds(server.pid), sum(s.bytes for s in subs), time.monotonic()
        subprocess.run(load + ["--duration", str(seconds), "--output", f"{work}/out"],
                       stdout=subprocess.DEVNULL, check=True)
        cpu1, got1, t1 = cpu_seconds(server.pid), sum(s.bytes for s in subs), time.monotonic()
        summary = json.load(open(f"{work}/out/summary.json"))
        requests = summary["requests"]
        for s in subs:
            s.stop = True
        per_sub = (got1 - got0) / (t1 - t0) / subscribers if subscribers else 0
        print(f"{label:<28} {requests / seconds:8.1f} req/s  p50 {summary['latency_ms']['p50']:6.2f}"
              f"  p99 {summary['latency_ms']['p99']:6.2f} ms  cpu/req {1000 * (cpu1 - cpu0) / requests:5.3f} ms"
              f"  {per_sub / 1024:6.1f} KiB/s per subscriber", flush=True)
    finally:
        server.terminate()
        server.wait()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--binary", default=str(REPO / "target" / "release" / "turnstile"))
    parser.add_argument("--baseline")
    parser.add_argument("--subscribers", default="0,1,10,100")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--seconds", type=int, default=15)
    parser.add_argument("--port", type=int, default=18096)
    args = parser.parse_args()
    counts = [int(n) for n in args.subscribers.split(",")]
    with tempfile.TemporaryDirectory() as work:
        for round_ in range(1, args.rounds + 1):
            if args.baseline:
                run(args.baseline, f"baseline, 0 subscribers #{round_}", 0, args.port, work, args.seconds)
            for n in counts:
                run(args.binary, f"{n} subscribers #{round_}", n, args.port, work, args.seconds)


if __name__ == "__main__":
    main()
