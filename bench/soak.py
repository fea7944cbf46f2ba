"""A soak and chaos run (not in CI): mixed load on one release server with the global gate on a
local Redis, for --seconds (default 1,800):

- 12 closed-loop clients asking the question mix (bench/mix.jsonl);
- 2 clients sending bad inputs (bad JSON, no question, a question too long, a wrong type);
- 2 slow clients that send half a request head and stall past the header timeout;
- 2 `/events` subscribers, each reconnecting every 30 s;
- a hot swap every minute (the lexical and the default plugin in turn), a SIGHUP at half time;
- Redis stopped for 20 s at 40 % of the run, then started again.

Every 10 s it samples the server's resident memory, open files and threads. At the end it waits
for the gate to empty and reports: resources after warm-up (60 s) against the end, every status
seen by kind of client, and the leases left (local and global).

    cargo build --release -p turnstile-cli && cargo xtask plugins
    python3 bench/soak.py [--seconds 1800] [--binary target/release/turnstile]
"""

import argparse
import asyncio
import collections
import json
import os
import random
import signal
import socket
import subprocess
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
MIX = [line.strip() for line in open(REPO / "bench" / "mix.jsonl") if line.strip()]
PLUGINS = [REPO / "target" / "plugins" / "retrieval.wasm", REPO / "target" / "plugins" / "retrieval-hybrid.wasm"]
BAD = [
    ("application/json", b"{not json"),
    ("application/json", b"{}"),
    ("application/json", json.dumps({"question": "x" * 600}).encode()),
    ("application/json", b'{"question": 7}'),
    ("text/plain", b'{"question": "json"}'),
]


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


async def request(port, method, path, body=b"", content_type="application/json", timeout=30):
    """One request on its own connection: (status, body) or (None, error)."""
    try:
        reader, writer = await asyncio.wait_for(asyncio.open_connection("127.0.0.1", port), 5)
        head = (
            f"{method} {path} HTTP/1.1\r\nhost: 127.0.0.1\r\nconnection: close\r\n"
            f"content-type: {content_type}\r\ncontent-length: {len(body)}\r\n\r\n"
        ).encode()
        writer.write(head + body)
        await writer.drain()
        raw = await asyncio.wait_for(reader.read(), timeout)
        writer.close()
        status = int(raw.split(b" ", 2)[1])
        return status, raw.split(b"\r\n\r\n", 1)[1] if b"\r\n\r\n" in raw else b""
    except Exception as e:  # noqa: BLE001 - every failure is a finding, counted by kind
        return None, type(e).__name__


def sample(pid):
    status = open(f"/proc/{pid}/status").read()
    field = lambda name: int(next(l.split()[1] for l in status.splitlines() if l.startswith(name)))
    return {
        "rss_mib": round(field("VmRSS:") / 1024, 1),
        "threads": field("Threads:"),
        "open_files": len(os.listdir(f"/proc/{pid}/fd")),
    }


async def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--seconds", type=float, default=1800)
    ap.add_argument("--binary", default=str(REPO / "target" / "release" / "turnstile"))
    args = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="soak.")
    redis_port, port = free_port(), free_port()
    redis_cmd = ["redis-server", "--port", str(redis_port), "--save", "", "--appendonly", "no"]
    redis = subprocess.Popen(redis_cmd, stdout=subprocess.DEVNULL)
    log = open(Path(tmp) / "server.log", "w")
    server = subprocess.Popen(
        [
            args.binary, "serve", "--listen", f"127.0.0.1:{port}", "--cache-dir", tmp,
            "--max-active", "2", "--max-waiting", "32", "--wait-ms", "2000",
            "--header-timeout-ms", "1000", "--redis-url", f"redis://127.0.0.1:{redis_port}",
            "--global-max-active", "8", "--global-lease-ttl-ms", "3000",
        ],
        stdout=log, stderr=log,
    )
    statuses = collections.defaultdict(collections.Counter)
    events = []
    stop = asyncio.Event()
    started = time.monotonic()
    elapsed = lambda: time.monotonic() - started
    for _ in range(600):
        if (await request(port, "GET", "/readyz"))[0] == 200:
            break
        await asyncio.sleep(0.5)
    else:
        raise SystemExit("server never ready; log in " + tmp)
    # Past the grace the fresh Redis opens: no global lease for one TTL (docs/SCALE.md).
    for _ in range(600):
        status, body = await request(port, "GET", "/state")
        if status == 200 and json.loads(body)["global"]["grace_ms"] == 0:
            break
        await asyncio.sleep(0.1)

    async def valid():
        while not stop.is_set():
            status, _ = await request(port, "POST", "/retrieve", random.choice(MIX).encode())
            statuses["valid"][status] += 1

    async def bad():
        while not stop.is_set():
            ctype, body = random.choice(BAD)
            status, _ = await request(port, "POST", "/retrieve", body, ctype)
            statuses["bad"][status] += 1
            await asyncio.sleep(0.05)

    async def slow():
        while not stop.is_set():
            try:
                reader, writer = await asyncio.open_connection("127.0.0.1", port)
                writer.write(b"POST /retrieve HTTP/1.1\r\nhost: 127.0.0.1\r\n")
                await writer.drain()
                data = await asyncio.wait_for(reader.read(), 10)
                statuses["slow"]["closed by server" if not data else data.split(b" ", 2)[1].decode()] += 1
                writer.close()
            except Exception as e:  # noqa: BLE001
                statuses["slow"][type(e).__name__] += 1

    async def subscriber():
        while not stop.is_set():
            try:
                reader, writer = await asyncio.open_connection("127.0.0.1", port)
                writer.write(b"GET /events HTTP/1.1\r\nhost: 127.0.0.1\r\n\r\n")
                await writer.drain()
                head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 10)
                statuses["events"][int(head.split(b" ", 2)[1])] += 1
                until = time.monotonic() + 30
                while time.monotonic() < until and not stop.is_set():
                    if not await asyncio.wait_for(reader.read(65536), 20):
                        statuses["events"]["ended early"] += 1
                        break
                writer.close()
            except Exception as e:  # noqa: BLE001
                statuses["events"][type(e).__name__] += 1

    async def chaos():
        swaps, hup, redis_down = 0, False, False
        nonlocal redis
        while not stop.is_set():
            await asyncio.sleep(1)
            if elapsed() > 60 * (swaps + 1):
                swaps += 1
                plugin = PLUGINS[swaps % 2]
                status, body = await request(port, "POST", "/admin/plugin", json.dumps({"path": str(plugin)}).encode(), timeout=120)
                statuses["swap"][status] += 1
                events.append((round(elapsed()), f"swap to {plugin.name}: {status}"))
            if not hup and elapsed() > args.seconds / 2:
                hup = True
                server.send_signal(signal.SIGHUP)
                events.append((round(elapsed()), "SIGHUP"))
            if not redis_down and elapsed() > args.seconds * 0.4:
                redis_down = True
                redis.terminate()
                redis.wait()
                events.append((round(elapsed()), "Redis stopped"))
                await asyncio.sleep(20)
                redis = subprocess.Popen(redis_cmd, stdout=subprocess.DEVNULL)
                events.append((round(elapsed()), "Redis started"))

    samples = []

    async def sampler():
        while not stop.is_set():
            samples.append((round(elapsed()), sample(server.pid)))
            await asyncio.sleep(10)

    tasks = [asyncio.create_task(f()) for f in [valid] * 12 + [bad] * 2 + [slow] * 2 + [subscriber] * 2 + [chaos, sampler]]
    await asyncio.sleep(args.seconds)
    stop.set()
    await asyncio.wait(tasks, timeout=60)
    # The gate empties: no lease left behind.
    state = {}
    for _ in range(120):
        status, body = await request(port, "GET", "/state")
        state = json.loads(body) if status == 200 else {}
        if state.get("active") == 0 and state.get("waiting") == 0 and state.get("global", {}).get("this_replica") == 0:
            break
        await asyncio.sleep(0.5)
    end = sample(server.pid)
    server.send_signal(signal.SIGTERM)
    server.wait(timeout=60)
    redis.terminate()
    warm = next((s for t, s in samples if t >= 60), samples[0][1])
    print(f"\nsoak: {args.seconds:.0f} s, binary {args.binary}, log {tmp}/server.log\n")
    print("| resource | after warm-up (60 s) | end | change |")
    print("| --- | ---: | ---: | ---: |")
    for key in ["rss_mib", "open_files", "threads"]:
        change = (end[key] - warm[key]) / warm[key] * 100 if warm[key] else 0
        print(f"| {key} | {warm[key]} | {end[key]} | {change:+.1f} % |")
    print("\n| client | statuses seen |")
    print("| --- | --- |")
    for kind, counter in statuses.items():
        print(f"| {kind} | {', '.join(f'{k}: {v}' for k, v in sorted(counter.items(), key=str))} |")
    print(f"\nleases left: local active {state.get('active')}, waiting {state.get('waiting')}, "
          f"global held by this replica {state.get('global', {}).get('this_replica')}")
    print("events:", "; ".join(f"{t} s {e}" for t, e in events))
    print("samples (s, rss MiB, files, threads):", " ".join(f"{t}:{s['rss_mib']}/{s['open_files']}/{s['threads']}" for t, s in samples))


if __name__ == "__main__":
    asyncio.run(main())
