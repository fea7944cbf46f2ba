#!/usr/bin/env bash
# The Debian package as an operator gets it (root, Debian; CI runs it after the tests):
#
#   tests/installed.sh [--keep] PACKAGE.deb   install it, check it, serve a question, purge it
#   tests/installed.sh --purge                purge it (after a --keep), checking what is left
#
# The checks: the files where Debian puts them; the service's system user; the configuration a
# valid `serve` file; `systemd-analyze verify` clean on the installed unit (its binary, user and
# man pages found); the installed /usr/bin/turnstile started as the unit starts it — as the
# `turnstile` user, with /etc/turnstile/turnstile.toml, on a free loopback port (no systemd runs
# here) — answering one POST /retrieve with sources, then draining on SIGTERM. --keep leaves
# the package installed for what runs next (CI: tests/outsider.sh). It replaces an installed
# turnstile package and purges it at the end: not for a machine whose turnstile is in use.
set -euo pipefail

fail() { echo "installed.sh: $*" >&2; exit 1; }
[ "$(id -u)" -eq 0 ] || fail "needs root (it installs a package)"

purge() {
    dpkg --purge turnstile
    for gone in /usr/bin/turnstile /etc/turnstile /usr/lib/systemd/system/turnstile.service \
        /var/cache/turnstile; do
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
for tool in systemd-analyze curl python3; do
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

# Serve as the unit does: its user, its command line; port 0, and the port read from the log.
work="$(mktemp -d)"
chmod 755 "$work"
log="$work/serve.log"
setpriv --reuid=turnstile --regid=turnstile --init-groups --no-new-privs \
    env -i PATH=/usr/bin:/bin LANG=C.UTF-8 \
    /usr/bin/turnstile serve --config /etc/turnstile/turnstile.toml --listen 127.0.0.1:0 \
    >"$log" 2>&1 &
pid=$!
stop() { kill -TERM "$pid" 2>/dev/null || true; }
trap 'stop; rm -rf "$work"' EXIT
addr=""
for _ in $(seq 1 1200); do  # 120 s: the first start builds the corpus index and compiles the plugin
    addr="$(sed -n 's/.*listening on http:\/\/\([0-9.:]*\).*/\1/p' "$log" | head -n 1)"
    [ -n "$addr" ] && break
    kill -0 "$pid" 2>/dev/null || { cat "$log" >&2; fail "serve exited before listening"; }
    sleep 0.1
done
[ -n "$addr" ] || { cat "$log" >&2; fail "serve did not listen within 120 s"; }
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
grep -q "shutdown complete" "$log" || { cat "$log" >&2; fail "serve did not drain"; }
ls /var/cache/turnstile/* >/dev/null 2>&1 || fail "serve wrote nothing in /var/cache/turnstile"
echo "installed.sh: the installed binary served a question as the turnstile user and drained"

if [ "$keep" -eq 0 ]; then
    purge
fi
