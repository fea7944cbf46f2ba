"""The live page under the classic demonstration: `serve` with the delay fixture (20 slots, calls
of 2 s, the queue of docs/BENCHMARKS.md section 1), `turnstile load` with 60 users spawned at
5/s, a hot swap halfway (delay 2 s -> 1 s: a new generation, the queue drains), and Playwright +
Debian's chromium taking a screenshot of /dashboard 5 s before the load ends.

    cargo build --release -p turnstile-cli && cargo xtask plugins && tests/setup.sh
    target/test-venv/bin/python bench/dashboard-demo.py [--out docs/dashboard.png]

Environment: TURNSTILE_BIN (target/release/turnstile), PORT (18095).
"""

import argparse
import json
import os
import subprocess
import tempfile
import threading
import time
import urllib.request
from pathlib import Path

from playwright.sync_api import sync_playwright

REPO = Path(__file__).resolve().parent.parent


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", default=str(REPO / "docs" / "dashboard.png"))
    parser.add_argument("--duration", type=int, default=60)
    args = parser.parse_args()
    binary = os.environ.get("TURNSTILE_BIN", str(REPO / "target" / "release" / "turnstile"))
    port = int(os.environ.get("PORT", "18095"))
    delay = REPO / "target" / "plugins" / "delay.wasm"
    base = f"http://127.0.0.1:{port}"
    with tempfile.TemporaryDirectory() as work:
        server = subprocess.Popen(
            [binary, "serve", "--listen", f"127.0.0.1:{port}", "--cache-dir", f"{work}/cache",
             "--plugin", str(delay), "--plugin-config", "delay_ms=2000", "--max-active", "20",
             "--max-waiting", "1000", "--wait-ms", "300000", "--access-log", "false"],
            stdout=open(f"{work}/serve.log", "w"), stderr=subprocess.STDOUT)
        try:
            for _ in range(600):
                try:
                    urllib.request.urlopen(f"{base}/readyz", timeout=1)
                    break
                except OSError:
                    time.sleep(0.1)
            with sync_playwright() as p:
                browser = p.chromium.launch(executable_path="/usr/bin/chromium", headless=True,
                                            args=["--no-sandbox", "--disable-gpu"])
                page = browser.new_page(viewport={"width": 1400, "height": 1000})
                page.goto(f"{base}/dashboard")
                page.wait_for_function("document.getElementById('status').textContent === 'live'")
                load = subprocess.Popen(
                    [binary, "load", "--url", f"{base}/retrieve", "--users", "60",
                     "--spawn-rate", "5", "--duration", str(args.duration),
                     "--output", f"{work}/load", "--quiet"],
                    stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
                started = time.monotonic()
                page.wait_for_timeout(args.duration / 2 * 1000)
                # The swap's smoke checks call the candidate (1 s each): in the background.
                swap = urllib.request.Request(
                    f"{base}/admin/plugin", method="POST",
                    headers={"content-type": "application/json"},
                    data=json.dumps({"path": str(delay), "config": {"delay_ms": "1000"}}).encode())
                swapped = threading.Thread(
                    target=lambda: print("swap:", urllib.request.urlopen(swap, timeout=60).read().decode()))
                swapped.start()
                page.wait_for_timeout((started + args.duration - 5 - time.monotonic()) * 1000)
                page.screenshot(path=args.out, full_page=True)
                swapped.join()
                print("screenshot:", args.out)
                browser.close()
                load.wait()
            summary = json.load(open(f"{work}/load/summary.json"))
            print("load:", {k: summary[k] for k in ("requests", "statuses") if k in summary})
        finally:
            server.terminate()
            server.wait()


if __name__ == "__main__":
    main()
