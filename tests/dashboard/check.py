"""Opens turnstile's /dashboard in headless Chromium (Playwright, Debian's chromium) and checks
that the page shows what the server's /state says.

    check.py URL SCREENSHOT.png

Prints "stream connected" once the page's stream is live, then reads one JSON line on stdin
(the expected counts, taken by the test from /state after its load), waits (deadline 60 s) until
the page shows exactly those numbers, saves a screenshot, and prints "page matches /state".
Exits 1 with what the page showed if it never does.
"""

import json
import os
import shutil
import sys
import time

from playwright.sync_api import sync_playwright

# Generous: CI machines run many tests and a browser on two cores.
DEADLINE_S = 60


def chromium_path():
    for candidate in (os.environ.get("TURNSTILE_CHROMIUM"), "/usr/bin/chromium", shutil.which("chromium")):
        if candidate and os.path.exists(candidate):
            return candidate
    sys.exit("no chromium: run tests/setup.sh (Debian package chromium)")


def shown(page):
    """What the page shows, as the test's expected keys."""
    text = lambda id_: page.text_content(f"#{id_}").strip()
    number = lambda id_: int(text(id_))
    return {
        "admitted": number("total-admitted"),
        "released": number("total-released"),
        "queue_full": number("total-queue_full"),
        "wait_timeout": number("total-wait_timeout"),
        "active": number("active"),
        "waiting": number("waiting"),
        "generation": number("plugin-generation"),
        "last_event": int(page.eval_on_selector("#log tbody tr:first-child td:first-child", "e => e.textContent")),
    }


def main():
    url, screenshot = sys.argv[1], sys.argv[2]
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium_path(), headless=True, timeout=120_000,
                                    args=["--no-sandbox", "--disable-gpu"])
        page = browser.new_page(viewport={"width": 1400, "height": 900})
        errors = []
        page.on("pageerror", lambda e: errors.append(str(e)))
        page.on("console", lambda m: m.type == "error" and errors.append(m.text))
        page.set_default_timeout(DEADLINE_S * 1000)
        page.goto(url)
        page.wait_for_function("document.getElementById('status').textContent === 'live'",
                               timeout=DEADLINE_S * 1000)
        print("stream connected", flush=True)
        expected = json.loads(sys.stdin.readline())
        deadline = time.monotonic() + DEADLINE_S
        last = None
        while time.monotonic() < deadline:
            try:
                last = shown(page)
            except (ValueError, TypeError) as e:  # a cell not filled yet
                last = {"error": str(e)}
            if last == expected:
                break
            page.wait_for_timeout(50)
        # Rows for the events, newest first: the log's first row is the last event.
        page.screenshot(path=screenshot, full_page=True)
        browser.close()
    if errors:
        print(f"page errors: {errors}")
        sys.exit(1)
    if last != expected:
        print(f"the page never matched /state: expected {expected}, shown {last}")
        sys.exit(1)
    print("page matches /state", flush=True)


if __name__ == "__main__":
    main()
