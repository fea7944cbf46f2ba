#!/usr/bin/env bash
# Builds the plugin: target/{{name}}.wasm, a WebAssembly component of turnstile's
# `retrieval-plugin` world, from plugin.js against the WIT the host wrote into wit/.
# The toolchain is componentize-js, pinned (with every dependency's hash) in package-lock.json and
# installed by `npm ci`; set COMPONENTIZE_JS to use an existing componentize-js (a path or a command
# name) instead. package.json also pins @bytecodealliance/preview2-shim 0.25.0, which componentize-js
# 0.23.0 needs at build time but does not declare (and with 0.26 it cannot read wit/).
set -euo pipefail
cd "$(dirname "$0")"

die() { echo "build.sh: $*" >&2; exit 1; }

[ -f wit/retrieval.wit ] ||
    die "wit/retrieval.wit is missing: it is the contract, written by \`turnstile new plugin\` (copy it from the turnstile you target)"

if [ -n "${COMPONENTIZE_JS:-}" ]; then
    cjs=$(command -v "$COMPONENTIZE_JS") || die "COMPONENTIZE_JS=$COMPONENTIZE_JS is not an executable"
else
    command -v node >/dev/null && command -v npm >/dev/null ||
        die "node and npm not found; install Node.js 20 or later with npm (https://nodejs.org, or Debian/Ubuntu: apt-get install nodejs npm)"
    cjs=node_modules/.bin/componentize-js
    # (Re)install when node_modules is missing or package-lock.json changed since it was installed.
    if ! cmp -s package-lock.json node_modules/.installed-package-lock.json 2>/dev/null; then
        npm ci --no-audit --no-fund
        cp package-lock.json node_modules/.installed-package-lock.json
    fi
fi
version=$("$cjs" --version)
[ "$version" = "0.23.0" ] ||
    echo "build.sh: warning: componentize-js $version, not the pinned 0.23.0" >&2

mkdir -p target
# -w/-n: the WIT directory and world. -d: WASI features compiled out: `fetch-event`, the HTTP
# server entry point. `http` stays: it is `fetch`, over wasi:http, which reaches only the origins
# the operator grants (`ask` in plugin.js; add `http` to -d for a plugin that calls nothing
# outside). stdio, clocks and random stay too: console.log/console.error reach the host's log,
# Date and Math.random work. (stdio brings wasi:filesystem imports with it; the host links them
# to nothing.)
"$cjs" plugin.js -w wit -n retrieval-plugin -d fetch-event -o target/{{name}}.wasm
echo "built target/{{name}}.wasm ($(wc -c < target/{{name}}.wasm) bytes)"
