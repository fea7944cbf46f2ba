#!/usr/bin/env bash
# What the tests need beyond Rust, installed when missing (idempotent, quick when present):
# - Debian packages: `prometheus` (for `promtool`, which checks a scrape of /metrics), curl, openssl
#   (tests make an internal CA),
#   chromium (the live page's browser test) and redis-server (the global limit's tests start
#   their own, on free loopback ports); for the Debian package (`cargo xtask dist`,
#   tests/installed.sh): dpkg-dev (dpkg-shlibdeps finds the binary's library packages), systemd
#   (`systemd-analyze verify` of the installed unit) and man-db (which finds its man pages);
# - a Python venv, target/test-venv, with the tools pinned in tests/requirements.txt:
#   Schemathesis (tests/schemathesis/run.sh) and Playwright (tests/dashboard/check.py);
# - the pinned toolchains that build the Python and JavaScript plugins (componentize-py,
#   componentize-js: plugins/toolchains/install.sh, into target/toolchains).
# The packages need root (a fresh machine, CI); otherwise this says what to run.
set -euo pipefail
repo="$(cd "$(dirname "$0")/.." && pwd)"

missing=()
command -v promtool >/dev/null || missing+=(prometheus)
command -v curl >/dev/null || missing+=(curl)
command -v openssl >/dev/null || missing+=(openssl)
[ -x /usr/bin/chromium ] || missing+=(chromium)
command -v redis-server >/dev/null || missing+=(redis-server)
command -v dpkg-shlibdeps >/dev/null || missing+=(dpkg-dev)
command -v systemd-analyze >/dev/null || missing+=(systemd)
command -v man >/dev/null || missing+=(man-db)
if [ ${#missing[@]} -gt 0 ]; then
    if [ "$(id -u)" -ne 0 ]; then
        echo "tests/setup.sh: missing Debian packages: ${missing[*]}; run: sudo apt-get install -y ${missing[*]}" >&2
        exit 1
    fi
    apt-get update
    DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "${missing[@]}"
fi

venv="$repo/target/test-venv"
requirements="$repo/tests/requirements.txt"
# Reinstalled only when the pins change (the copy beside the venv is what it was made from).
if ! cmp -s "$requirements" "$venv/requirements.txt"; then
    python3 -m venv "$venv"
    "$venv/bin/pip" install --quiet --disable-pip-version-check -r "$requirements"
    cp "$requirements" "$venv/requirements.txt"
fi

"$repo/plugins/toolchains/install.sh"
