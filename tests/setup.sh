#!/usr/bin/env bash
# What the tests need beyond Rust, installed when missing (idempotent, quick when present):
# - Debian packages: `prometheus` (for `promtool`, which checks a scrape of /metrics) and curl;
# - a Python venv with Schemathesis (pinned in tests/schemathesis/requirements.txt), which a
#   test runs against a real server (tests/schemathesis/run.sh).
# The packages need root (a fresh machine, CI); otherwise this says what to run.
set -euo pipefail
repo="$(cd "$(dirname "$0")/.." && pwd)"

missing=()
command -v promtool >/dev/null || missing+=(prometheus)
command -v curl >/dev/null || missing+=(curl)
if [ ${#missing[@]} -gt 0 ]; then
    if [ "$(id -u)" -ne 0 ]; then
        echo "tests/setup.sh: missing Debian packages: ${missing[*]}; run: sudo apt-get install -y ${missing[*]}" >&2
        exit 1
    fi
    apt-get update
    DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "${missing[@]}"
fi

venv="$repo/target/schemathesis-venv"
want="$(sed -n 's/^schemathesis==//p' "$repo/tests/schemathesis/requirements.txt")"
if ! "$venv/bin/st" --version 2>/dev/null | grep -qF "$want"; then
    python3 -m venv "$venv"
    "$venv/bin/pip" install --quiet --disable-pip-version-check \
        -r "$repo/tests/schemathesis/requirements.txt"
fi
