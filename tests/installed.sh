#!/usr/bin/env bash
# The Debian package as an operator gets it (root, Debian; CI runs it after the tests):
#
#   tests/installed.sh [--keep] PACKAGE.deb   install it, check it, serve a question, purge it
#   tests/installed.sh --purge                purge it (after a --keep), checking what is left
#
# The checks: the files where Debian puts them; the service's system user; the configuration a
# valid `serve` file; `systemd-analyze verify` clean on the installed unit (its binary, user and
# man pages found); the installed /usr/bin/turnstile started as the unit starts it — as the
# `turnstile` user, with /etc/turnstile/turnstile.toml, on a free loopback port — answering one
# POST /retrieve with sources, then draining on SIGTERM; the shipped plugins and docs where the
# README says; then a model key given to the service as docs/OUTBOUND.md ("A key for the
# service") says: a root-only key file, a drop-in with `LoadCredential=`, the configuration
# serving /usr/share/turnstile/plugins/rag.wasm with `outbound-bearer` from the credential, the
# unit (re)started, and one chat completion answered through tests/upstream/upstream.py, which
# requires the key (its /stats: accepted, none rejected) — the key in no log line, command line,
# environment or /state; everything it changed is undone. Where systemd runs (PID 1), the unit is
# started by systemctl and its journal read; where it does not (CI's machine), the unit's command
# line is run as above with the credential put where systemd puts it
# (/run/credentials/turnstile.service/, the service's user's only), and its output is the journal.
# --keep leaves the package installed for what runs next (CI: tests/outsider.sh). It replaces an
# installed turnstile package and purges it at the end: not for a machine whose turnstile is in
# use.
set -euo pipefail

fail() { echo "installed.sh: $*" >&2; exit 1; }
[ "$(id -u)" -eq 0 ] || fail "needs root (it installs a package)"
repo="$(cd "$(dirname "$0")/.." && pwd)"

purge() {
    dpkg --purge turnstile
    for gone in /usr/bin/turnstile /etc/turnstile /usr/lib/systemd/system/turnstile.service \
        /var/cache/turnstile /usr/share/turnstile /usr/share/doc/turnstile \
        /etc/systemd/system/turnstile.service.d; do
        [ ! -e "$gone" ] || fail "$gone is still there after dpkg --purge"
    done
    echo "installed.sh: purged: no file of the package is left"
}

keep=0
case "${1:-}" in
    --purge) purge; exit 0 ;;
    --keep) keep=1; shift ;;
esac
deb="${1:?usage: tests/installed.sh [--keep] PACKAGE.deb | --purge}"
[ -f "$deb" ] || fail "$deb: no such file"
for tool in systemd-analyze curl python3 setpriv; do
    command -v "$tool" >/dev/null || fail "needs $tool (tests/setup.sh installs it)"
done

# A machine whose dpkg leaves out man pages (slim container images: path-exclude) gets none of
# ours either: there, they are not looked for, nor checked by systemd-analyze.
man=(/usr/share/man/man1/turnstile.1.gz /usr/share/man/man1/turnstile-serve.1.gz)
verify_man=yes
if grep -qs '^path-exclude=/usr/share/man' /etc/dpkg/dpkg.cfg /etc/dpkg/dpkg.cfg.d/*; then
    man=()
    verify_man=no
fi
# The same for the docs (such images keep only each package's copyright).
docs=(README.md docs/OUTBOUND.md docs/OPENAI.md docs/openapi.json docs/turnstile.example.toml
    docs/dashboard.png docs/outbound/one-replica.svg plugins/rag/README.md)
if grep -qs '^path-exclude=/usr/share/doc' /etc/dpkg/dpkg.cfg /etc/dpkg/dpkg.cfg.d/*; then
    docs=()
fi

dpkg -i "$deb"
for file in /usr/bin/turnstile /etc/turnstile/turnstile.toml \
    /usr/lib/systemd/system/turnstile.service "${man[@]}" \
    /usr/share/bash-completion/completions/turnstile \
    /usr/share/zsh/vendor-completions/_turnstile \
    /usr/share/fish/vendor_completions.d/turnstile.fish /usr/share/doc/turnstile/copyright; do
    [ -e "$file" ] || fail "the package installed no $file"
done
grep -qx /etc/turnstile/turnstile.toml /var/lib/dpkg/info/turnstile.conffiles ||
    fail "/etc/turnstile/turnstile.toml is not a conffile"
id turnstile >/dev/null || fail "postinst made no turnstile user"
[ "$(id -u turnstile)" -lt 1000 ] || fail "the turnstile user is not a system user"
[ "$(stat -c %U:%a /var/cache/turnstile)" = turnstile:700 ] ||
    fail "/var/cache/turnstile is $(stat -c %U:%a /var/cache/turnstile), not turnstile:700"
dpkg --verify turnstile || fail "dpkg --verify: installed files differ from the package's"
command -v turnstile >/dev/null || fail "turnstile is not on the PATH"
turnstile --version
turnstile config check /etc/turnstile/turnstile.toml

systemd-analyze verify --man="$verify_man" /usr/lib/systemd/system/turnstile.service ||
    fail "systemd-analyze verify found problems in the installed unit (above)"
echo "installed.sh: systemd-analyze verify: clean"
systemd-analyze security --offline=true /usr/lib/systemd/system/turnstile.service 2>/dev/null |
    tail -n 1 || true

# Serve as the unit does: its user, its command line (`serve_as_unit LOG [VAR=VALUE…] [--
# FLAG…]`: the environment systemd would add, then flags after the unit's); the port read from
# the log (`wait_listening LOG`).
work="$(mktemp -d)"
chmod 755 "$work"
pid=""
serve_as_unit() {
    local log="$1" env=() flags=()
    shift
    while [ $# -gt 0 ] && [ "$1" != -- ]; do env+=("$1"); shift; done
    [ $# -gt 0 ] && shift && flags=("$@")
    setpriv --reuid=turnstile --regid=turnstile --init-groups --no-new-privs \
        env -i PATH=/usr/bin:/bin LANG=C.UTF-8 "${env[@]}" \
        /usr/bin/turnstile serve --config /etc/turnstile/turnstile.toml "${flags[@]}" \
        >"$log" 2>&1 &
    pid=$!
}
stop() { [ -z "$pid" ] || kill -TERM "$pid" 2>/dev/null || true; }
# What the key test changed, undone (also when a check fails half-way).
undo=()
cleanup() {
    stop
    local i
    for ((i = ${#undo[@]} - 1; i >= 0; i--)); do eval "${undo[i]}" || true; done
    undo=()
    rm -rf "$work"
}
trap cleanup EXIT
addr=""
# Sets addr from `listening on http://ADDR` in what `$1` prints (a file, or a command: `cmd:…`).
wait_listening() {
    local source="$1" alive="$2" text
    addr=""
    for _ in $(seq 1 1200); do  # 120 s: a first start builds the corpus index and compiles the plugin
        case "$source" in
            cmd:*) text="$(eval "${source#cmd:}" 2>/dev/null || true)" ;;
            *) text="$(cat "$source" 2>/dev/null || true)" ;;  # the job may not have opened it yet
        esac
        addr="$(sed -n 's/.*listening on http:\/\/\([0-9.:]*\).*/\1/p' <<<"$text" | head -n 1)"
        [ -n "$addr" ] && return 0
        eval "$alive" || { printf '%s\n' "$text" >&2; fail "serve exited before listening"; }
        sleep 0.1
    done
    printf '%s\n' "$text" >&2
    fail "serve did not listen within 120 s"
}

log="$work/serve.log"
serve_as_unit "$log" -- --listen 127.0.0.1:0
wait_listening "$log" 'kill -0 "$pid" 2>/dev/null'
answer="$work/answer.json"
status="$(curl -s -o "$answer" -w '%{http_code}' "http://$addr/retrieve" \
    -H 'content-type: application/json' \
    -d '{"question": "How do I parse command line arguments?", "limit": 3}')"
[ "$status" = 200 ] || { cat "$answer" >&2; fail "POST /retrieve answered $status"; }
python3 - "$answer" <<'EOF'
import json, sys
answer = json.load(open(sys.argv[1]))
sources = answer["sources"]
assert answer["status"] == "completed" and 1 <= len(sources) <= 3, answer
assert all(s["id"] and s["title"] for s in sources), answer
print(f"installed.sh: POST /retrieve: 200, {len(sources)} sources, the first {sources[0]['id']!r}")
EOF
stop
wait "$pid" || { cat "$log" >&2; fail "serve did not exit 0 on SIGTERM"; }
pid=""
grep -q "shutdown complete" "$log" || { cat "$log" >&2; fail "serve did not drain"; }
ls /var/cache/turnstile/* >/dev/null 2>&1 || fail "serve wrote nothing in /var/cache/turnstile"
echo "installed.sh: the installed binary served a question as the turnstile user and drained"

# The release's plugins and docs, where README's "Install" says: every plugin the package lists
# (none a test fixture), and the docs beside README with what they link to.
plugins=/usr/share/turnstile/plugins
mapfile -t listed < <(dpkg -L turnstile | grep "^$plugins/.*\.wasm$" | sort)
for name in rag retrieval retrieval-hybrid retrieval-py retrieval-js; do
    [ -s "$plugins/$name.wasm" ] || fail "the package installed no $plugins/$name.wasm"
done
for file in "${listed[@]}"; do
    case "$(basename "$file" .wasm)" in
        escape* | fault | hostile | fetch | delay | cpu | hostcalls*) fail "the package ships the test fixture $file" ;;
    esac
    [ "$(stat -c %U:%a "$file")" = root:644 ] || fail "$file is $(stat -c %U:%a "$file"), not root:644"
done
for doc in "${docs[@]}"; do
    [ -s "/usr/share/doc/turnstile/$doc" ] || fail "the package installed no /usr/share/doc/turnstile/$doc"
done
if [ ${#docs[@]} -gt 0 ]; then
    grep -q '^## A key for the service$' /usr/share/doc/turnstile/docs/OUTBOUND.md ||
        fail "the installed docs/OUTBOUND.md has no section \"A key for the service\""
fi
echo "installed.sh: ${#listed[@]} plugins in $plugins ($(cd "$plugins" && ls | paste -sd ' ')), ${#docs[@]} docs in /usr/share/doc/turnstile"

# A model key for the service, as docs/OUTBOUND.md "A key for the service" gives it: a root-only
# file, read by systemd (LoadCredential=) into the service's credentials, bound by the host to
# the model's origin (outbound-bearer); rag.wasm never holds it. The model is the project's test
# upstream on loopback, which answers 401 to any request without `Authorization: Bearer KEY`.
systemd_runs=no
[ -d /run/systemd/system ] && systemd_runs=yes
key="sk-installed-$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')"
keyfile=/etc/turnstile/openai.key
config=/etc/turnstile/turnstile.toml
dropin_dir=/etc/systemd/system/turnstile.service.d
dropin="$dropin_dir/installed-test-openai-key.conf"
credentials=/run/credentials/turnstile.service
for path in "$keyfile" "$dropin"; do
    [ ! -e "$path" ] || fail "$path exists already: not touching this machine's key"
done

UPSTREAM_REQUIRE_KEY="$key" python3 "$repo/tests/upstream/upstream.py" --port 0 \
    >"$work/upstream.log" 2>&1 &
upstream_pid=$!
undo+=('kill -TERM "$upstream_pid" 2>/dev/null; wait "$upstream_pid" 2>/dev/null')
for _ in $(seq 1 100); do
    upstream="$(sed -n 's/^listening on \(http:\/\/[0-9.:]*\)$/\1/p' "$work/upstream.log")"
    [ -n "$upstream" ] && break
    kill -0 "$upstream_pid" 2>/dev/null || { cat "$work/upstream.log" >&2; fail "the upstream exited"; }
    sleep 0.1
done
[ -n "$upstream" ] || fail "the upstream did not listen within 10 s"

(umask 077 && printf '%s\n' "$key" >"$keyfile")
undo+=('rm -f "$keyfile"')
[ "$(stat -c %U:%G:%a "$keyfile")" = root:root:600 ] || fail "$keyfile is not root's alone"
if setpriv --reuid=turnstile --regid=turnstile --init-groups cat "$keyfile" >/dev/null 2>&1; then
    fail "the turnstile user can read $keyfile: the key would not need the credential"
fi

cp -p "$config" "$work/turnstile.toml.orig"
undo+=('cp -p "$work/turnstile.toml.orig" "$config"')
# The keys docs/OUTBOUND.md sets, each in place of its line in the file (a key may appear once).
python3 - "$config" "$upstream" <<'EOF'
import re, sys
path, upstream = sys.argv[1:]
settings = {
    "listen": '"127.0.0.1:0"',
    "plugin": '"/usr/share/turnstile/plugins/rag.wasm"',
    "plugin-config": f'{{ upstream = "{upstream}", model = "local-model" }}',
    "outbound-allow": f'["{upstream}"]',
    "outbound-bearer": f'["{upstream}=file:/run/credentials/turnstile.service/openai"]',
}
lines = open(path).read().split("\n")
for key, value in settings.items():
    for pattern in (rf"^{re.escape(key)} = ", rf"^# {re.escape(key)} = "):
        at = next((i for i, line in enumerate(lines) if re.match(pattern, line)), None)
        if at is not None:
            lines[at] = f"{key} = {value}"
            break
    else:
        sys.exit(f"{path} has no line for {key}")
open(path, "w").write("\n".join(lines))
EOF
turnstile config check "$config"

mkdir -p "$dropin_dir"
undo+=('rm -f "$dropin"; rmdir "$dropin_dir" 2>/dev/null')
cat >"$dropin" <<EOF
# installed.sh: the model's key, as docs/OUTBOUND.md "A key for the service" gives it.
[Service]
LoadCredential=openai:$keyfile
EOF
# verify reads the drop-in too, and names it in what it finds (an unknown key is only a warning).
verified="$(systemd-analyze verify --man="$verify_man" /usr/lib/systemd/system/turnstile.service 2>&1)" ||
    { printf '%s\n' "$verified" >&2; fail "systemd-analyze verify found problems in the unit with the drop-in"; }
! grep -qF "$dropin" <<<"$verified" || { printf '%s\n' "$verified" >&2; fail "systemd-analyze verify: $dropin"; }

journal="$work/journal.txt"
if [ "$systemd_runs" = yes ]; then
    systemctl daemon-reload
    undo+=('systemctl stop turnstile.service; systemctl daemon-reload')
    systemctl restart turnstile.service
    invocation="$(systemctl show -p InvocationID --value turnstile.service)"
    read_journal="journalctl --no-pager -o cat _SYSTEMD_INVOCATION_ID=$invocation"
    wait_listening "cmd:$read_journal" 'systemctl is-active --quiet turnstile.service'
    service_pid="$(systemctl show -p MainPID --value turnstile.service)"
else
    # What LoadCredential= does: the file copied into the unit's credentials directory, readable
    # by the service's user alone, and $CREDENTIALS_DIRECTORY naming it.
    install -d -o turnstile -g turnstile -m 0500 "$credentials"
    undo+=('rm -rf "$credentials"; rmdir /run/credentials 2>/dev/null')
    install -o turnstile -g turnstile -m 0400 "$keyfile" "$credentials/openai"
    log="$work/serve-rag.log"
    serve_as_unit "$log" "CREDENTIALS_DIRECTORY=$credentials"
    wait_listening "$log" 'kill -0 "$pid" 2>/dev/null'
    service_pid="$pid"
fi

answer="$work/chat.json"
status="$(curl -s -o "$answer" -w '%{http_code}' "http://$addr/v1/chat/completions" \
    -H 'content-type: application/json' \
    -d '{"model":"turnstile-rag","messages":[{"role":"user","content":"how do I parse json?"}]}')"
[ "$status" = 200 ] || { cat "$answer" >&2; fail "POST /v1/chat/completions answered $status"; }
curl -fsS "$upstream/stats" >"$work/stats.json" || fail "the upstream's GET /stats failed"
curl -fsS "http://$addr/state" >"$work/state.json" || fail "GET /state failed"
python3 - "$answer" "$work/stats.json" "$work/state.json" "$upstream" <<'EOF'
import json, re, sys
answer, stats, state = (json.load(open(p)) for p in sys.argv[1:4])
upstream = sys.argv[4]
content = answer["choices"][0]["message"]["content"]
ids = {s["id"] for s in answer["sources"]}
quoted = re.findall(r"\[([^\]]+)\]", content)
assert any(q in ids for q in quoted), (content, ids)
assert stats["auth_accepted"] >= 1 and stats["auth_rejected"] == 0, stats
bindings = json.dumps(state["outbound"]["credentials"])
assert upstream in bindings, bindings
print(f"installed.sh: POST /v1/chat/completions: 200, the answer quotes "
      f"[{next(q for q in quoted if q in ids)}]; the upstream accepted the key "
      f"{stats['auth_accepted']} time(s), rejected it 0 times; /state binds {bindings}")
EOF

# The key is in none of what the service shows: its journal (here, what the unit's command line
# printed), its command line and environment, /state.
if [ "$systemd_runs" = yes ]; then
    journalctl --no-pager -u turnstile.service -o verbose --all >"$journal"
else
    cp "$log" "$journal"
fi
grep -q "listening on" "$journal" || fail "the journal has no serve output: nothing was checked"
for shown in "$journal" "/proc/$service_pid/cmdline" "/proc/$service_pid/environ" "$work/state.json" \
    "$answer"; do
    ! grep -qaF "$key" "$shown" || fail "the key shows in $shown"
done
echo "installed.sh: the key is in no journal line, command line, environment or /state of the service"

if [ "$systemd_runs" = no ]; then
    stop
    wait "$pid" || { cat "$log" >&2; fail "serve (rag) did not exit 0 on SIGTERM"; }
    pid=""
fi
cleanup
trap - EXIT
for path in "$keyfile" "$dropin" "$credentials"; do
    [ ! -e "$path" ] || fail "$path is still there after the key test"
done
dpkg --verify turnstile || fail "dpkg --verify after the key test: the package's files differ"
echo "installed.sh: the key test's key, drop-in and settings are gone; the package is as installed"

if [ "$keep" -eq 0 ]; then
    purge
fi
