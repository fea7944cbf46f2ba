#!/usr/bin/env bash
# The per-call host overhead against a recorded baseline, so that a change that makes every
# request dearer shows (the last wave added about 0.1 ms of server CPU a request and nothing
# measured it): bench/per-call.sh on the lexical and the hybrid plugins, each plugin's server CPU
# per request (median of ROUNDS) compared with bench/baselines/per-call.tsv, recorded on this
# machine. Exits 1 when a plugin costs more than TOLERANCE (default 1.10) times its baseline on
# the same CPU model; on another CPU it only prints the ratios (a baseline is a machine's).
#
#   bench/per-call-baseline.sh BINARY            compare
#   bench/per-call-baseline.sh BINARY --record   write the baseline from BINARY
#
# Environment: N (600), ROUNDS (5), WARM (200), TOLERANCE (1.10), GUESTS (target/guests/...).
set -euo pipefail
REPO="$(cd "$(dirname "$0")/.." && pwd)"
[ $# -ge 1 ] && [ -x "$1" ] || { echo "usage: $0 BINARY [--record]" >&2; exit 2; }
BIN="$1"; RECORD="${2:-}"
GUESTS="${GUESTS:-$REPO/target/guests/wasm32-wasip2/release}"
BASELINE="$REPO/bench/baselines/per-call.tsv"
TOLERANCE="${TOLERANCE:-1.10}"
cpu_model="$(sed -n 's/^model name\s*:\s*//p' /proc/cpuinfo | head -1)"
out="$(N="${N:-600}" ROUNDS="${ROUNDS:-5}" WARM="${WARM:-200}" \
  "$REPO/bench/per-call.sh" "$BIN" "$GUESTS/retrieval.wasm" "$GUESTS/retrieval_hybrid.wasm")"
echo "$out"
measured="$(echo "$out" | awk '!/^#/ && $1 != "plugin" {print $1 "\t" $2 "\t" $4}')"
if [ "$RECORD" = "--record" ]; then
  {
    echo "# per-call baseline: $(date -u +%FT%TZ), $(git -C "$REPO" rev-parse --short HEAD), $(nproc) cores"
    echo "# cpu: $cpu_model"
    echo -e "# plugin\tcpu_ms\tp50_ms"
    echo "$measured"
  } >"$BASELINE"
  echo "recorded $BASELINE"
  exit 0
fi
[ -f "$BASELINE" ] || { echo "no baseline: run with --record first" >&2; exit 2; }
python3 - "$BASELINE" "$cpu_model" "$TOLERANCE" <<PYEOF
import sys
baseline_file, cpu_model, tolerance = sys.argv[1], sys.argv[2], float(sys.argv[3])
lines = open(baseline_file).read().splitlines()
recorded_cpu = next((l.split(": ", 1)[1] for l in lines if l.startswith("# cpu: ")), "")
base = {l.split("\t")[0]: (float(l.split("\t")[1]), float(l.split("\t")[2]))
        for l in lines if l and not l.startswith("#")}
now = {}
for line in """$measured""".splitlines():
    name, cpu, p50 = line.split("\t")
    now[name] = (float(cpu), float(p50))
same_machine = recorded_cpu == cpu_model
worse = []
print(f"{'plugin':28} {'cpu_ms':>8} {'baseline':>9} {'ratio':>6}   {'p50_ms':>7} {'baseline':>9}")
for name, (cpu, p50) in now.items():
    if name not in base:
        print(f"{name:28} {cpu:8.2f} {'-':>9}")
        continue
    b_cpu, b_p50 = base[name]
    ratio = cpu / b_cpu
    print(f"{name:28} {cpu:8.2f} {b_cpu:9.2f} {ratio:6.2f}   {p50:7.2f} {b_p50:9.2f}")
    if ratio > tolerance:
        worse.append(f"{name} {ratio:.2f}x")
if not same_machine:
    print(f"another CPU than the baseline's ({recorded_cpu!r}): ratios shown, not judged")
    sys.exit(0)
if worse:
    print(f"dearer than the baseline (tolerance {tolerance}x): {', '.join(worse)}")
    sys.exit(1)
print(f"within {tolerance}x of the baseline")
PYEOF
