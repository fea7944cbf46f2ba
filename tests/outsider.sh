#!/usr/bin/env bash
# The plugin kit as an author outside this repository uses it: for each language, from an empty
# temporary directory with only a turnstile binary and the language's public toolchain,
#   turnstile new plugin --lang L DIR   the project
#   ./build.sh                          the template's own build, as its README says (cargo from
#                                       crates.io; pip from PyPI into .venv; npm ci from npm)
#   ./check.sh                          turnstile check (must pass) and turnstile eval
#   turnstile serve --plugin ...        on a free loopback port, until /readyz answers 200; Python
#                                       and JavaScript with their `upstream` set to a local
#                                       OpenAI-compatible model (tests/upstream/upstream.py), its
#                                       origin granted (--outbound-allow)
#   curl POST /retrieve                 one question: 200 with at least one source (and, for Python
#                                       and JavaScript, the model's answer quoting one)
# and the server stopped; the seconds of every step are printed, and a table at the end.
#
# Usage: tests/outsider.sh [TURNSTILE_BINARY [LANG...]]
#   TURNSTILE_BINARY  default: `turnstile` on PATH (on CI, the installed /usr/bin/turnstile)
#   LANG              rust, python, js (default: all three, in that order)
#
# What an author has, and nothing else: every step runs with `env -i` and only HOME, USER, LANG,
# TMPDIR, PATH (with the binary's own directory first), RUSTUP_HOME/CARGO_HOME (where rustup put
# the Rust toolchain, when not the default), PYENV_ROOT and the machine's proxy and CA-bundle
# settings. So no TURNSTILE_TOOLCHAINS, COMPONENTIZE_PY/COMPONENTIZE_JS, CARGO_TARGET_DIR,
# CARGO_NET_OFFLINE, CARGO_PROFILE_*, RUSTFLAGS or compiler wrapper from the caller reaches the
# author's build: the toolchains come from the registries, through the tools' own caches in HOME
# (cargo's registry, pip's and npm's caches), exactly where an author's would be.
# Needs: Rust (rustup, the wasm32-wasip2 target, Rust >= 1.85), python3 with venv, node >= 20 with
# npm, curl. Exits non-zero, naming the step, at the first step that fails; the temporary
# directory (projects, venvs, node_modules, cargo's target) and any server are removed on exit.
set -euo pipefail

die() { echo "outsider.sh: $*" >&2; exit 1; }

binary="${1:-turnstile}"
shift || true
langs=("$@")
[ ${#langs[@]} -gt 0 ] || langs=(rust python js)
for lang in "${langs[@]}"; do
    case "$lang" in rust | python | js) ;; *) die "unknown language $lang (rust, python, js)" ;; esac
done
resolved=$(command -v "$binary") || die "no turnstile binary: $binary (give its path, or put it on PATH)"
binary=$(cd "$(dirname "$resolved")" && pwd)/$(basename "$resolved")
command -v curl >/dev/null || die "curl is needed to ask the served plugin a question"
upstream_script="$(cd "$(dirname "$0")" && pwd)/upstream/upstream.py"

work=$(mktemp -d "${TMPDIR:-/tmp}/turnstile-outsider.XXXXXX")
server_pid=
upstream_pid=
cleanup() {
    local status=$? pid
    for pid in "$server_pid" "$upstream_pid"; do
        if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then
            kill "$pid" 2>/dev/null || true
            wait "$pid" 2>/dev/null || true
        fi
    done
    rm -rf "$work"
    exit "$status"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# The author's PATH: the binary, as `turnstile`, first (a directory of its own, so nothing else
# from the binary's directory comes along), then the caller's PATH.
mkdir -p "$work/bin" "$work/home-of-projects"
ln -s "$binary" "$work/bin/turnstile"
author_env=(env -i "PATH=$work/bin:$PATH" "HOME=$HOME")
for name in USER LOGNAME LANG LC_ALL TERM TMPDIR RUSTUP_HOME CARGO_HOME PYENV_ROOT XDG_CACHE_HOME \
    http_proxy https_proxy no_proxy HTTP_PROXY HTTPS_PROXY NO_PROXY ALL_PROXY all_proxy \
    SSL_CERT_FILE SSL_CERT_DIR CURL_CA_BUNDLE REQUESTS_CA_BUNDLE NODE_EXTRA_CA_CERTS PIP_CERT; do
    [ -n "${!name:-}" ] && author_env+=("$name=${!name}")
done
author() { "${author_env[@]}" "$@"; }

echo "outsider.sh: $("$binary" --version 2>/dev/null || echo "$binary") in $work"
author bash -c 'echo "  rust:   $(rustc --version 2>&1) / $(cargo --version 2>&1)"
                echo "  python: $(python3 --version 2>&1), $(python3 -m pip --version 2>&1 | cut -d" " -f1-2)"
                echo "  node:   $(node --version 2>&1), npm $(npm --version 2>&1)"' || true

now() { echo "${EPOCHREALTIME/,/.}"; }
seconds() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.1f", b - a }'; }

# step LANG NAME COMMAND...: runs COMMAND (its output shown), records and prints its seconds;
# a failure ends the script naming the step.
declare -A took
step() {
    local lang=$1 name=$2 start
    shift 2
    echo
    echo "== $lang: $name"
    start=$(now)
    if ! "$@"; then
        echo "outsider.sh: FAILED: $lang: $name (after $(seconds "$start" "$(now)") s)" >&2
        exit 1
    fi
    took[$lang.$name]=$(seconds "$start" "$(now)")
    echo "-- $lang: $name: ${took[$lang.$name]} s"
}

# The model the Python and JavaScript templates ask (their `upstream`): the project's local
# OpenAI-compatible upstream, on a free loopback port, for the whole run. It is the operator's
# backend, not part of the author's toolchain, so it runs outside `env -i`. Sets upstream_pid and
# upstream.
start_upstream() {
    local deadline=$((SECONDS + 30))
    python3 "$upstream_script" --port 0 >"$work/upstream.out" 2>"$work/upstream.log" &
    upstream_pid=$!
    until upstream=$(sed -n 's/^listening on //p' "$work/upstream.out") && [ -n "$upstream" ]; do
        kill -0 "$upstream_pid" 2>/dev/null || { cat "$work/upstream.log" >&2; die "the upstream exited"; }
        [ $SECONDS -lt $deadline ] || die "the upstream did not listen in 30 s"
        sleep 0.1
    done
    echo "the templates' model: $upstream"
}

# Serves PROJECT's component on 127.0.0.1:0 (the kernel picks a free port), with more `serve` flags
# if given, waits (at most 120 s) for the address in the log and then for /readyz to answer 200.
# Sets server_pid and base.
serve() {
    local project=$1 wasm=$2 log=$1/serve.log deadline=$((SECONDS + 120)) address=
    shift 2
    (cd "$project" && exec "${author_env[@]}" turnstile serve --plugin "$wasm" --listen 127.0.0.1:0 "$@") \
        >"$log" 2>&1 &
    server_pid=$!
    while [ -z "$address" ]; do
        kill -0 "$server_pid" 2>/dev/null || { cat "$log" >&2; echo "the server exited" >&2; return 1; }
        [ $SECONDS -lt $deadline ] || { cat "$log" >&2; echo "no listening address in 120 s" >&2; return 1; }
        # The line that says where it listens (a granted origin is logged before it).
        address=$(sed -n 's|.*listening on \(http://127\.0\.0\.1:[0-9][0-9]*\).*|\1|p' "$log" | head -n 1 || true)
        [ -n "$address" ] || sleep 0.2
    done
    base=$address
    until [ "$(curl -s -o /dev/null -w '%{http_code}' "$base/readyz")" = 200 ]; do
        kill -0 "$server_pid" 2>/dev/null || { cat "$log" >&2; echo "the server exited" >&2; return 1; }
        [ $SECONDS -lt $deadline ] || { cat "$log" >&2; echo "/readyz not 200 in 120 s" >&2; return 1; }
        sleep 0.2
    done
    echo "serving $wasm on $base"
}

# One question: HTTP 200 and at least one source; with `asked` (a template told of a model), the
# model's answer too, quoting a source (the upstream's answers start "According to [ID]").
ask() {
    local project=$1 asked=${2:-} status
    status=$(curl -sS -o "$project/answer.json" -w '%{http_code}' "$base/retrieve" \
        -H 'content-type: application/json' \
        -d '{"question": "serialize an object to a JSON formatted string", "limit": 3}')
    echo "HTTP $status: $(head -c 400 "$project/answer.json")"
    [ "$status" = 200 ] || { echo "expected HTTP 200" >&2; return 1; }
    grep -q '"sources":\[{"id":' "$project/answer.json" || { echo "expected at least one source" >&2; return 1; }
    if [ -n "$asked" ]; then
        grep -q '"answer":"According to \[' "$project/answer.json" ||
            { echo "expected the model's answer (its log: $work/upstream.log)" >&2; cat "$project/serve.log" >&2; return 1; }
    fi
}

# Stops the server (SIGTERM) and waits, at most 30 s, for it to exit.
stop() {
    local deadline=$((SECONDS + 30))
    kill "$server_pid"
    while kill -0 "$server_pid" 2>/dev/null; do
        [ $SECONDS -lt $deadline ] || { echo "the server did not stop in 30 s" >&2; return 1; }
        sleep 0.1
    done
    wait "$server_pid" 2>/dev/null || true
    server_pid=
}

upstream=
for lang in "${langs[@]}"; do
    [ "$lang" = rust ] || [ -n "$upstream" ] || start_upstream
done

for lang in "${langs[@]}"; do
    name="my-$lang-plugin"
    project="$work/home-of-projects/$name"
    # The Rust template calls nothing outside; the others ask the model when told where it is.
    outbound=()
    [ "$lang" = rust ] || outbound=(--outbound-allow "$upstream" --plugin-config "upstream=$upstream")
    begin=$(now)
    step "$lang" new author bash -c "cd '$work/home-of-projects' && turnstile new plugin --lang $lang $name"
    step "$lang" build author bash -c "cd '$project' && ./build.sh"
    step "$lang" check author bash -c "cd '$project' && ./check.sh"
    step "$lang" serve serve "$project" "$project/target/$name.wasm" "${outbound[@]}"
    step "$lang" ask ask "$project" "${outbound[*]}"
    step "$lang" stop stop
    took[$lang.total]=$(seconds "$begin" "$(now)")
    # The next language starts from nothing too (and the disk is given back).
    rm -rf "$project"
done

echo
echo "outsider.sh: every step passed; seconds per step"
printf '%-8s %7s %7s %7s %7s %7s %7s %7s\n' lang new build check serve ask stop total
for lang in "${langs[@]}"; do
    printf '%-8s' "$lang"
    for name in new build check serve ask stop total; do printf ' %7s' "${took[$lang.$name]}"; done
    echo
done
