#!/usr/bin/env bash
# What one call of each plugin costs the server, counted from outside: for each PLUGIN, one
# `turnstile serve --plugin PLUGIN --max-active 2` over the shipped corpus, WARM requests of the
# question mix to warm it up, then N more, sent one at a time (so the numbers depend little on what
# else the machine runs), ROUNDS times. Per plugin it prints the server's CPU per request (utime +
# stime from /proc/PID/stat) and its minor page faults per request (minflt), each the median of the
# rounds, the median latency, and a digest of the answers (ids, order, scores, snippets of every
# request of the first round), so two builds of a plugin that must answer alike can be compared by
# their digests.
#
#   bench/per-call.sh BINARY PLUGIN...
#
# Environment: MIX (bench/mix.jsonl), N (400), ROUNDS (3), WARM (100), MAX_ACTIVE (2), MEMORY_INIT (the
#   server's default: `serve --plugin-memory-init`), KEEP_RESIDENT_MIB (the server's default:
#   `serve --plugin-keep-resident-mib`), ANSWERS (a directory: each plugin's answers
#   written there as NAME.jsonl, one line per request).
set -euo pipefail

REPO="$(cd "$(dirname "$0")/.." && pwd)"
[ $# -ge 2 ] && [ -x "$1" ] || { echo "usage: $0 BINARY PLUGIN..." >&2; exit 2; }
BIN="$1"; shift
MIX="${MIX:-$REPO/bench/mix.jsonl}"; N="${N:-400}"; ROUNDS="${ROUNDS:-3}"; WARM="${WARM:-100}"
MAX_ACTIVE="${MAX_ACTIVE:-2}"
WORK="$(mktemp -d /tmp/per-call.XXXXXX)"
source "$REPO/bench/pids.sh"
cleanup() { stop_all; rm -rf "$WORK"; }
trap cleanup EXIT

echo "# $(date -u +%FT%TZ) binary sha256 $(sha256sum "$BIN" | cut -c1-12), $(nproc) cores, N=$N ROUNDS=$ROUNDS WARM=$WARM" \
  "max_active=$MAX_ACTIVE memory_init=${MEMORY_INIT:-default}"
printf '%-28s %8s %8s %10s %10s  %s\n' plugin cpu_ms faults p50_ms requests answers
port=18700
for file in "$@"; do
  [ -f "$file" ] || { echo "$file: no such file" >&2; exit 1; }
  name="$(basename "$file" .wasm)"
  port=$((port + 1))
  init=()
  [ -n "${MEMORY_INIT:-}" ] && init=(--plugin-memory-init "$MEMORY_INIT")
  [ -n "${KEEP_RESIDENT_MIB:-}" ] && init+=(--plugin-keep-resident-mib "$KEEP_RESIDENT_MIB")
  "$BIN" serve --listen "127.0.0.1:$port" --cache-dir "$WORK/cache" --plugin "$file" \
    --max-active "$MAX_ACTIVE" "${init[@]}" >"$WORK/$name.log" 2>&1 </dev/null &
  pid=$!; PIDS+=("$pid")
  wait_ready "$name" "$pid" "http://127.0.0.1:$port/readyz" "$WORK/$name.log" 3000
  python3 - "$pid" "$port" "$MIX" "$N" "$ROUNDS" "$WARM" "$(getconf CLK_TCK)" "$name" "${ANSWERS:-}" <<'EOF'
import hashlib, http.client, json, os, statistics, sys, time
pid, port, mix, n, rounds, warm, hz, name, answers = sys.argv[1:]
n, rounds, warm, hz = int(n), int(rounds), int(warm), int(hz)
bodies = [line.strip() for line in open(mix) if line.strip()]
connection = http.client.HTTPConnection("127.0.0.1", int(port), timeout=60)

def stat():
    # Fields after the command's closing parenthesis: minflt is field 10, utime 14, stime 15.
    fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12]), int(fields[7])

def ask(i):
    connection.request("POST", "/retrieve", bodies[i % len(bodies)], {"content-type": "application/json"})
    response = connection.getresponse()
    body = response.read()
    if response.status != 200:
        sys.exit(f"{name}: request {i}: {response.status} {body[:200]!r}")
    return json.loads(body)["sources"]

for i in range(warm):
    ask(i)
cpu, faults, latencies, digest, lines = [], [], [], hashlib.sha256(), []
for round in range(rounds):
    ticks0, faults0 = stat()
    for i in range(n):
        t = time.perf_counter()
        sources = ask(i)
        latencies.append((time.perf_counter() - t) * 1000)
        if round == 0:
            line = json.dumps(sources, sort_keys=True, ensure_ascii=False)
            digest.update(line.encode() + b"\n")
            lines.append(line)
    ticks1, faults1 = stat()
    cpu.append((ticks1 - ticks0) * 1000 / hz / n)
    faults.append((faults1 - faults0) / n)
if answers:
    os.makedirs(answers, exist_ok=True)
    with open(os.path.join(answers, name + ".jsonl"), "w") as out:
        out.write("\n".join(lines) + "\n")
print(f"{name:<28} {statistics.median(cpu):8.2f} {statistics.median(faults):8.1f} "
      f"{statistics.median(latencies):10.2f} {n * rounds:10d}  {digest.hexdigest()[:16]}")
EOF
  stop_pid "$pid"
done
