#!/usr/bin/env bash
# Fuzzes the HTTP API against its own OpenAPI document with Schemathesis (pinned in
# tests/requirements.txt, installed into target/test-venv by tests/setup.sh): a real
# `turnstile serve` with the default plugin on a free loopback port, every check, seeded and
# bounded (schemathesis.toml). Fails on any 5xx, any response that does not conform to the
# document, and any schema-valid /retrieve request that is refused. The integration test
# `api::schemathesis_finds_nothing` runs it with the binary under test.
#
#   tests/schemathesis/run.sh [path/to/turnstile]
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
bin="${1:-$repo/target/debug/turnstile}"
venv="$repo/target/test-venv"
[ -x "$bin" ] || { echo "missing $bin: cargo build -p turnstile-cli" >&2; exit 1; }

[ -x "$venv/bin/st" ] || { echo "missing $venv: run tests/setup.sh" >&2; exit 1; }

work="$(mktemp -d)"
port="$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
"$bin" serve --listen "127.0.0.1:$port" --cache-dir "$work/cache" --access-log false \
    >"$work/serve.log" 2>&1 &
server=$!
trap 'kill "$server" 2>/dev/null || true; wait "$server" 2>/dev/null || true; rm -rf "$work"' EXIT
for _ in $(seq 1 600); do
    curl -fsS "http://127.0.0.1:$port/readyz" >/dev/null 2>&1 && break
    kill -0 "$server" || { cat "$work/serve.log" >&2; exit 1; }
    sleep 0.2
done
cd "$here"
"$venv/bin/st" run "http://127.0.0.1:$port/openapi.json"
