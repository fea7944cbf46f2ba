#!/usr/bin/env bash
# Builds the plugin: target/{{name}}.wasm, a WebAssembly component of turnstile's
# `retrieval-plugin` world and wasi:http (world `retrieval-plugin-outbound`, wit/outbound.wit), from
# app.py against the WIT the host wrote into wit/.
# The toolchain is componentize-py, pinned with hashes in requirements.txt and installed into
# .venv; set COMPONENTIZE_PY to use an existing componentize-py (a path or a command name) instead.
set -euo pipefail
cd "$(dirname "$0")"

die() { echo "build.sh: $*" >&2; exit 1; }

[ -f wit/retrieval.wit ] ||
    die "wit/retrieval.wit is missing: it is the contract, written by \`turnstile new plugin\` (copy it from the turnstile you target)"

if [ -n "${COMPONENTIZE_PY:-}" ]; then
    cpy=$(command -v "$COMPONENTIZE_PY") || die "COMPONENTIZE_PY=$COMPONENTIZE_PY is not an executable"
else
    cpy=.venv/bin/componentize-py
    # (Re)install when the venv is missing or requirements.txt changed since it was installed.
    if ! cmp -s requirements.txt .venv/requirements.txt 2>/dev/null; then
        command -v python3 >/dev/null ||
            die "python3 not found; install Python 3.9 or later (Debian/Ubuntu: apt-get install python3 python3-venv)"
        python3 -m venv .venv ||
            die "python3 -m venv failed; install the venv module (Debian/Ubuntu: apt-get install python3-venv)"
        .venv/bin/pip install --quiet --require-hashes -r requirements.txt
        cp requirements.txt .venv/requirements.txt
    fi
fi
version=$("$cpy" --version)
[ "$version" = "componentize-py 0.25.1" ] ||
    echo "build.sh: warning: $version, not the pinned 0.25.1: its generated names may differ (app.py follows 0.25)" >&2

mkdir -p target
# -d/-w (the WIT directory and world) go before the subcommand; `app` is the module that defines
# `class WitWorld`. The world is the contract's with wasi:http/outgoing-handler (componentize-py
# generates bindings only for what the world names): `retrieval-plugin` alone, for a plugin that
# calls nothing outside.
"$cpy" -d wit -w retrieval-plugin-outbound componentize app -o target/{{name}}.wasm
echo "built target/{{name}}.wasm ($(wc -c < target/{{name}}.wasm) bytes)"
