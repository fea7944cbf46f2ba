"""Redis commands per admitted request under the global gate, as the queue grows: one replica
with `--global-max-active 4` in front of the delay fixture (20 ms), closed-loop clients
holding 10 or 1,000 requests waiting beyond the 4 running; Redis's own `INFO commandstats`
before and after a timed window, divided by the requests the global gate granted meanwhile
(`/state`). Each binary given is measured in turn (old and new side by side).

    cargo build --release -p turnstile-cli && cargo xtask plugins
    python3 bench/global-commands.py BINARY [BINARY ...] [--seconds 10] [--waiters 10 1000]
"""

import argparse
import asyncio
import json
import socket
import subprocess
import tempfile
import time
import urllib.request
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
DELAY = REPO / "target" / "plugins" / "delay.wasm"
RUNNING = 4


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def wait_ready(port, what):
    """Ready, and past the grace a fresh Redis opens (no lease for one TTL: docs/SCALE.md)."""
    for _ in range(1200):
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{port}/readyz", timeout=1)
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/state", timeout=5) as r:
                if json.load(r)["global"]["grace_ms"] == 0:
                    return
        except OSError:
            pass
        time.sleep(0.1)
    raise SystemExit(f"{what} on {port} never ready")


def redis_cli(port, *args):
    return subprocess.run(
        ["redis-cli", "-p", str(port), *args], capture_output=True, text=True, check=True
    ).stdout


def commands(port):
    """Calls of every command so far (INFO commandstats), by command."""
    calls = {}
    for line in redis_cli(port, "INFO", "commandstats").splitlines():
        if line.startswith("cmdstat_"):
            name, rest = line[len("cmdstat_"):].split(":", 1)
            fields = dict(kv.split("=") for kv in rest.split(","))
            calls[name] = int(fields["calls"])
    return calls


def granted(port):
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/state", timeout=5) as r:
        return json.load(r)["global"]["totals"]["granted"]


async def client(port, stop):
    """One closed-loop client on its own keep-alive connection (raw HTTP/1.1)."""
    body = b'{"question": "json dumps"}'
    request = (
        b"POST /retrieve HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\n"
        b"content-length: " + str(len(body)).encode() + b"\r\n\r\n" + body
    )
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    while not stop.is_set():
        writer.write(request)
        await writer.drain()
        head = await reader.readuntil(b"\r\n\r\n")
        length = int(
            next(
                line.split(b":")[1]
                for line in head.split(b"\r\n")
                if line.lower().startswith(b"content-length")
            )
        )
        await reader.readexactly(length)
    writer.close()


async def window(port, redis_port, clients, seconds):
    stop = asyncio.Event()
    tasks = [asyncio.create_task(client(port, stop)) for _ in range(clients)]
    await asyncio.sleep(3)  # warm-up: the queue fills
    before_calls, before_granted = commands(redis_port), granted(port)
    await asyncio.sleep(seconds)
    after_calls, after_granted = commands(redis_port), granted(port)
    stop.set()
    await asyncio.gather(*tasks, return_exceptions=True)
    delta = {k: v - before_calls.get(k, 0) for k, v in after_calls.items()}
    admitted = after_granted - before_granted
    scripts = delta.get("evalsha", 0) + delta.get("eval", 0)
    return admitted, scripts, sum(v for k, v in delta.items() if k != "info")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("binaries", nargs="+")
    ap.add_argument("--seconds", type=float, default=10)
    ap.add_argument("--waiters", type=int, nargs="+", default=[10, 1000])
    args = ap.parse_args()
    rows = []
    for binary in args.binaries:
        for waiters in args.waiters:
            with tempfile.TemporaryDirectory() as tmp:
                redis_port, port = free_port(), free_port()
                redis = subprocess.Popen(
                    ["redis-server", "--port", str(redis_port), "--save", "", "--appendonly", "no"],
                    stdout=subprocess.DEVNULL,
                )
                clients = RUNNING + waiters
                server = subprocess.Popen(
                    [
                        binary, "serve", "--listen", f"127.0.0.1:{port}", "--cache-dir", tmp,
                        "--plugin", str(DELAY), "--plugin-config", "delay_ms=20",
                        "--redis-url", f"redis://127.0.0.1:{redis_port}",
                        "--global-max-active", str(RUNNING),
                        "--global-max-waiting", str(clients + 10),
                        "--max-active", str(clients + 10), "--max-waiting", "10",
                        "--wait-ms", "300000", "--access-log", "false",
                    ],
                    stdout=subprocess.DEVNULL,
                    stderr=open(Path(tmp) / "server.log", "w"),
                )
                try:
                    wait_ready(port, binary)
                    admitted, scripts, total = asyncio.run(
                        window(port, redis_port, clients, args.seconds)
                    )
                finally:
                    server.terminate()
                    server.wait(timeout=30)
                    redis.terminate()
                    redis.wait()
            row = {
                "binary": binary,
                "waiters": waiters,
                "admitted": admitted,
                "scripts": scripts,
                "commands": total,
                "commands_per_admitted": round(total / admitted, 2) if admitted else None,
            }
            print(json.dumps(row), flush=True)
            rows.append(row)
    print("| binary | waiters | admitted | Redis commands | per admitted request |")
    print("| --- | ---: | ---: | ---: | ---: |")
    for r in rows:
        print(
            f"| {r['binary']} | {r['waiters']} | {r['admitted']} | {r['commands']} | "
            f"{r['commands_per_admitted']} |"
        )


if __name__ == "__main__":
    main()
