#!/usr/bin/env bash
# Installs the pinned toolchains that build turnstile's Python and JavaScript plugins, into
# target/toolchains/ (quick when they are there already):
#   py/  a venv with componentize-py (requirements.txt: exact version, sha256 of every wheel)
#   js/  componentize-js (package.json + package-lock.json: exact versions and integrity hashes)
# Needs python3 (with venv) and node >= 20 with npm. `cargo xtask plugins` and the build of the
# test fixtures use them; each is reinstalled only when its pins change.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
dest="${TURNSTILE_TOOLCHAINS:-$repo/target/toolchains}"

need() {
    command -v "$1" >/dev/null || { echo "plugins/toolchains/install.sh: $1 is missing; $2" >&2; exit 1; }
}
need python3 "install Python 3.11 or later (with its venv module)"
need node "install Node.js 20 or later"
need npm "install npm (it comes with Node.js)"

if ! cmp -s "$here/requirements.txt" "$dest/py/requirements.txt"; then
    rm -rf "$dest/py"
    python3 -m venv "$dest/py"
    "$dest/py/bin/pip" install --quiet --disable-pip-version-check --require-hashes \
        -r "$here/requirements.txt"
    cp "$here/requirements.txt" "$dest/py/requirements.txt"
fi

if ! cmp -s "$here/package-lock.json" "$dest/js/package-lock.json"; then
    rm -rf "$dest/js"
    mkdir -p "$dest/js"
    cp "$here/package.json" "$here/package-lock.json" "$dest/js/"
    (cd "$dest/js" && npm ci --no-audit --no-fund --loglevel=error)
fi
echo "toolchains ready in $dest: $("$dest/py/bin/componentize-py" --version), componentize-js $(node -p "require('$dest/js/node_modules/@bytecodealliance/componentize-js/package.json').version")"
