#!/usr/bin/env bash
# The question-mix load of bench/peer-compare.sh: `wrk` with loadtest/mix.lua, the bodies of
# $MIX (one JSON body per line, default bench/mix.jsonl, made by bench/mix-bodies.py) taken in
# turn, printing one JSON line of the same shape as ../shared/peers/load.sh (rps, p50, p99,
# status counts), so the two can be swapped.
#
#   bench/wrk-load.sh URL IGNORED_BODY CONCURRENCY SECONDS      (Debian package wrk)
set -euo pipefail
REPO="$(cd "$(dirname "$0")/.." && pwd)"
[ $# -eq 4 ] || { echo "usage: $0 URL BODY(ignored) CONCURRENCY SECONDS" >&2; exit 2; }
URL="$1"; CONC="$3"; SECS="$4"
MIX="${MIX:-$REPO/bench/mix.jsonl}"
command -v wrk >/dev/null || { echo "wrk not found: apt-get install wrk" >&2; exit 1; }
RAW="$(mktemp)"; trap 'rm -f "$RAW"' EXIT
wrk -t2 -c"$CONC" -d"${SECS}s" --latency -s "$REPO/loadtest/mix.lua" "$URL" -- "$MIX" >"$RAW"
python3 - "$RAW" "$URL" "$CONC" "$SECS" <<'PYEOF'
import json, re, sys
raw, url, conc, secs = sys.argv[1:]
text = open(raw).read()
def ms(value):
    number, unit = re.match(r"([\d.]+)(us|ms|s)", value).groups()
    return round(float(number) * {"us": 1e-3, "ms": 1.0, "s": 1e3}[unit], 3)
percentiles = dict(re.findall(r"^\s+(\d+)%\s+(\S+)", text, re.M))
status = {}
for code, n in re.findall(r"(\d{3})=(\d+)", (re.search(r"^statuses:(.*)$", text, re.M) or [None, ""])[1]):
    status[code] = status.get(code, 0) + int(n)
errors = dict((k, int(v)) for k, v in re.findall(r"(connect|read|write|timeout) (\d+)", text))
print(json.dumps({
    "url": url, "concurrency": int(conc), "seconds": float(secs),
    "requests": int(re.search(r"(\d+) requests in", text).group(1)),
    "rps": round(float(re.search(r"Requests/sec:\s+([\d.]+)", text).group(1)), 1),
    "p50_ms": ms(percentiles["50"]), "p99_ms": ms(percentiles["99"]),
    "status": dict(sorted(status.items())), "errors": {k: v for k, v in errors.items() if v},
}))
PYEOF
