#!/usr/bin/env python3
"""Server memory with N requests waiting in the gate (issue: memory per waiter, end to end).

Starts `turnstile serve` with the delay fixture holding its one slot (max_active 1,
max_waiting N, long wait deadline), records the server's RSS when idle, then opens N+1
loopback connections that each send one POST /retrieve and keep waiting, polls GET /state
until `waiting == N`, and records RSS again. Everything is on 127.0.0.1; the server and all
connections are closed at the end.

    python3 bench/waiting-memory.py [--binary target/release/turnstile] [--waiters 10000]
"""
import argparse, json, os, resource, socket, subprocess, sys, time, urllib.request

def rss_kib(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0

def state(port):
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/state", timeout=10) as r:
        return json.load(r)

def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--binary", default="target/release/turnstile")
    ap.add_argument("--delay-plugin", default="target/plugins/delay.wasm")
    ap.add_argument("--waiters", type=int, default=10000)
    ap.add_argument("--port", type=int, default=18471)
    a = ap.parse_args()
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, min(hard, a.waiters + 1000)), hard))
    server = subprocess.Popen(
        [a.binary, "serve", "--listen", f"127.0.0.1:{a.port}", "--plugin", a.delay_plugin,
         "--plugin-config", "delay_ms=600000", "--max-active", "1",
         "--max-waiting", str(a.waiters), "--wait-ms", "300000"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_NOFILE, (a.waiters + 1000, hard)))
    socks = []
    try:
        for _ in range(300):
            try:
                state(a.port); break
            except Exception:
                time.sleep(0.1)
        time.sleep(1.0)
        idle = rss_kib(server.pid)
        body = b'{"question": "How do I parse command line arguments?"}'
        req = (b"POST /retrieve HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
               b"Content-Length: " + str(len(body)).encode() + b"\r\n\r\n" + body)
        for i in range(a.waiters + 1):
            s = socket.create_connection(("127.0.0.1", a.port))
            s.sendall(req)
            socks.append(s)
        deadline = time.time() + 120
        st = state(a.port)
        while st["waiting"] < a.waiters and time.time() < deadline:
            time.sleep(0.2); st = state(a.port)
        time.sleep(1.0)
        loaded = rss_kib(server.pid)
        out = {"waiters": st["waiting"], "active": st["active"], "rss_idle_kib": idle,
               "rss_with_waiters_kib": loaded,
               "bytes_per_waiting_request": round((loaded - idle) * 1024 / max(st["waiting"], 1))}
        print(json.dumps(out))
    finally:
        for s in socks:
            s.close()
        server.kill(); server.wait()

if __name__ == "__main__":
    sys.exit(main())
