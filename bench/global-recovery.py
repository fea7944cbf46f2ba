"""How the global gate degrades and recovers when Redis goes away and comes back: one replica
with `--global-max-active 4` in front of the delay fixture (20 ms) under 8 closed-loop clients;
Redis is stopped (SIGKILL) after a warm-up and started again on the same port after `--down`
seconds. `/state` is sampled every 20 ms. Reported, for each failure mode:

- degraded after: Redis killed → the first request admitted on the local gate alone
  (`failed_open`, open) or refused 503 `global_unavailable` (closed);
- recovered after: Redis started (accepting connections) → the first lease Redis grants again.
  Redis comes back empty, so this includes the grace of one lease TTL (`--ttl-ms`) in which no
  new lease is granted while running calls re-assert theirs (docs/SCALE.md);
- what clients saw meanwhile: statuses, and the slowest response around the outage.

    cargo build --release -p turnstile-cli && cargo xtask plugins
    python3 bench/global-recovery.py BINARY [--down 5] [--ttl-ms 10000] [--modes open closed]
"""

import argparse
import asyncio
import json
import socket
import subprocess
import tempfile
import time
import urllib.request
from collections import Counter
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
DELAY = REPO / "target" / "plugins" / "delay.wasm"
CLIENTS = 8


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def wait_for(probe, what, seconds=120):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            if probe():
                return
        except OSError:
            pass
        time.sleep(0.02)
    raise SystemExit(f"{what}: never within {seconds} s")


def state(port):
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/state", timeout=5) as r:
        return json.load(r)["global"]


def redis_up(port):
    with socket.create_connection(("127.0.0.1", port), timeout=0.2) as s:
        s.sendall(b"PING\r\n")
        return s.recv(16).startswith(b"+PONG")


def start_redis(port):
    return subprocess.Popen(
        ["redis-server", "--port", str(port), "--save", "", "--appendonly", "no"],
        stdout=subprocess.DEVNULL,
    )


async def client(port, stop, seen):
    """One closed-loop client on its own keep-alive connection: (sent, answered, status)."""
    body = b'{"question": "json dumps"}'
    request = (
        b"POST /retrieve HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\n"
        b"content-length: " + str(len(body)).encode() + b"\r\n\r\n" + body
    )
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    while not stop.is_set():
        sent = time.monotonic()
        writer.write(request)
        await writer.drain()
        head = await reader.readuntil(b"\r\n\r\n")
        lines = head.split(b"\r\n")
        length = int(
            next(line.split(b":")[1] for line in lines if line.lower().startswith(b"content-length"))
        )
        await reader.readexactly(length)
        seen.append((sent, time.monotonic(), int(lines[0].split()[1])))
    writer.close()


async def outage(port, redis_port, redis, down, ttl):
    stop, seen, samples = asyncio.Event(), [], []
    tasks = [asyncio.create_task(client(port, stop, seen)) for _ in range(CLIENTS)]
    loop = asyncio.get_running_loop()

    async def sample(until):
        while time.monotonic() < until:
            samples.append((time.monotonic(), await loop.run_in_executor(None, state, port)))
            await asyncio.sleep(0.02)

    await sample(time.monotonic() + 3)  # warm-up
    redis.kill()
    redis.wait()
    killed = time.monotonic()
    await sample(killed + down)
    redis = start_redis(redis_port)
    await loop.run_in_executor(None, wait_for, lambda: redis_up(redis_port), "redis back")
    started = time.monotonic()
    await sample(started + ttl + 5)
    stop.set()
    await asyncio.gather(*tasks, return_exceptions=True)
    return redis, killed, started, seen, samples


def first(samples, after, test):
    return next((t for t, s in samples if t >= after and test(s)), None)


def run(binary, mode, down, ttl_ms):
    with tempfile.TemporaryDirectory() as tmp:
        redis_port, port = free_port(), free_port()
        redis = start_redis(redis_port)
        server = subprocess.Popen(
            [
                binary, "serve", "--listen", f"127.0.0.1:{port}", "--cache-dir", tmp,
                "--plugin", str(DELAY), "--plugin-config", "delay_ms=20",
                "--redis-url", f"redis://127.0.0.1:{redis_port}",
                "--global-max-active", "4", "--global-failure", mode,
                "--max-active", "8", "--max-waiting", "16", "--wait-ms", "5000",
                "--global-lease-ttl-ms", str(ttl_ms), "--access-log", "false",
            ],
            stdout=subprocess.DEVNULL,
            stderr=open(Path(tmp) / "server.log", "w"),
        )
        try:
            # Ready, and past the grace the fresh Redis opens at the first call.
            wait_for(lambda: state(port)["grace_ms"] == 0, "server ready, past the grace")
            redis, killed, started, seen, samples = asyncio.run(
                outage(port, redis_port, redis, down, ttl_ms / 1000)
            )
        finally:
            server.terminate()
            server.wait(timeout=30)
            redis.kill()
            redis.wait()
    at_kill = next(s for t, s in samples if t >= killed)["totals"]
    degraded = first(
        samples,
        killed,
        lambda s: s["totals"]["failed_open"] > at_kill["failed_open"]
        or s["totals"]["unavailable"] > at_kill["unavailable"],
    )
    at_start = next(s for t, s in samples if t >= started)["totals"]
    recovered = first(samples, started, lambda s: s["totals"]["granted"] > at_start["granted"])
    breaker_closed = first(samples, started, lambda s: not s["circuit_open"])
    during = Counter(status for sent, _, status in seen if killed <= sent < started)
    after = Counter(status for sent, _, status in seen if sent >= started)
    around = [done - sent for sent, done, _ in seen if killed - 1 <= sent < started + ttl_ms / 1000 + 5]
    ms = lambda t, since: None if t is None else round((t - since) * 1e3)
    return {
        "mode": mode,
        "down_s": down,
        "ttl_ms": ttl_ms,
        "degraded_after_ms": ms(degraded, killed),
        "recovered_after_ms": ms(recovered, started),
        "breaker_closed_after_ms": ms(breaker_closed, started),
        "during": dict(sorted(during.items())),
        "after": dict(sorted(after.items())),
        "slowest_ms": round(max(around) * 1e3, 1) if around else None,
    }


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("binary")
    ap.add_argument("--down", type=float, default=5)
    ap.add_argument("--ttl-ms", type=int, default=10000)
    ap.add_argument("--modes", nargs="+", default=["open", "closed"])
    args = ap.parse_args()
    rows = []
    for mode in args.modes:
        row = run(args.binary, mode, args.down, args.ttl_ms)
        print(json.dumps(row), flush=True)
        rows.append(row)
    print("| failure mode | degraded after | recovered after | breaker closed after "
          "| statuses while down | statuses after | slowest response |")
    print("| --- | ---: | ---: | ---: | --- | --- | ---: |")
    for r in rows:
        print(
            f"| {r['mode']} | {r['degraded_after_ms']} ms | {r['recovered_after_ms']} ms | "
            f"{r['breaker_closed_after_ms']} ms | {r['during']} | {r['after']} | "
            f"{r['slowest_ms']} ms |"
        )


if __name__ == "__main__":
    main()
