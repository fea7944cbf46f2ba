#!/usr/bin/env python3
"""How many slow (slowloris) connections a `turnstile serve` holds before /healthz stops answering.

Starts the given binary on a free loopback port, then opens connections that send half a request
head (`POST /retrieve HTTP/1.1\\r\\nHost: x\\r\\n`) and stop, in steps of --step. After each step it
asks /healthz (--probe-timeout seconds). It reports the count at which /healthz first failed (or
that it never did up to --max), how many of the slow connections the server had closed by then,
and how long /healthz took to answer again once no new slow connections came.

    python3 bench/slow-connections.py --binary target/release/turnstile --max 5000
"""
import argparse
import http.client
import os
import socket
import subprocess
import sys
import time


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def healthz(port, timeout):
    try:
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
        conn.request("GET", "/healthz")
        ok = conn.getresponse().status == 200
        conn.close()
        return ok
    except (OSError, http.client.HTTPException):
        return False


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--binary", required=True)
    ap.add_argument("--max", type=int, default=5000)
    ap.add_argument("--step", type=int, default=250)
    ap.add_argument("--probe-timeout", type=float, default=2.0)
    ap.add_argument("--recovery-limit", type=float, default=60.0)
    ap.add_argument("extra", nargs="*", help="more `serve` flags")
    args = ap.parse_args()

    import resource
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    port = free_port()
    # The server inherits this process's limits as they are; only then does the client raise its
    # own, so that it can hold more connections than the server's default allows.
    server = subprocess.Popen(
        [args.binary, "serve", "--listen", f"127.0.0.1:{port}", *args.extra],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    try:
        deadline = time.time() + 120
        while not healthz(port, 1.0):
            if time.time() > deadline or server.poll() is not None:
                sys.exit("the server did not start")
            time.sleep(0.2)
        held = []
        failed_at = None
        while len(held) < args.max:
            for _ in range(args.step):
                s = socket.socket()
                s.setblocking(True)
                try:
                    s.connect(("127.0.0.1", port))
                    s.sendall(b"POST /retrieve HTTP/1.1\r\nHost: x\r\n")
                except OSError:
                    s.close()
                    break
                held.append(s)
            if not healthz(port, args.probe_timeout):
                failed_at = len(held)
                break
        closed = 0
        for s in held:
            s.setblocking(False)
            try:
                if s.recv(1) == b"":
                    closed += 1
            except BlockingIOError:
                pass
            except OSError:
                closed += 1
        recovered = None
        if failed_at is not None:
            start = time.time()
            while time.time() - start < args.recovery_limit:
                if healthz(port, 1.0):
                    recovered = time.time() - start
                    break
                time.sleep(0.5)
        print(f"fd soft limit of this client: raised from {soft} to {hard}")
        if failed_at is None:
            print(f"/healthz answered with {len(held)} slow connections open (the most tried)")
        else:
            print(f"/healthz failed with {failed_at} slow connections open "
                  f"({closed} of them already closed by the server)")
            print("/healthz answered again after "
                  + (f"{recovered:.1f} s" if recovered is not None else f"more than {args.recovery_limit:.0f} s")
                  + " with the slow connections still held by the client")
        for s in held:
            s.close()
    finally:
        server.terminate()
        server.wait(timeout=60)


if __name__ == "__main__":
    main()
