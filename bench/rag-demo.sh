#!/usr/bin/env bash
# The classic demo, for real: 60 users against the `rag` plugin, whose model upstream
# (tests/upstream/upstream.py, an OpenAI-compatible server) answers in 2 s, behind
# `--max-active 20` — then three replicas sharing `--global-max-active 20` on Redis. The
# upstream counts its own concurrent requests: it must never see more than 20.
#
#   bench/rag-demo.sh [SECONDS=60] [OUT=target/bench/rag-demo]
#
# Needs: a release build (cargo build --release -p turnstile-cli), target/plugins/rag.wasm
# (cargo xtask plugins), python3, redis-server. Prints a summary per run and writes each
# `turnstile load` run's summary.json and chart into OUT.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds="${1:-60}"
out="${2:-target/bench/rag-demo}"
bin="${TURNSTILE_BIN:-target/release/turnstile}"
rag="${RAG_WASM:-target/plugins/rag.wasm}"
latency_ms=2000
mkdir -p "$out"
[ -x "$bin" ] || { echo "build it first: cargo build --release -p turnstile-cli" >&2; exit 1; }
[ -f "$rag" ] || { echo "build it first: cargo xtask plugins" >&2; exit 1; }

pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; }
trap cleanup EXIT

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
wait_for() { for _ in $(seq 1 600); do curl -sf "$1" >/dev/null 2>&1 && return 0; sleep 0.1; done; echo "never up: $1" >&2; return 1; }

# The upstream.
fifo="$out/upstream.fifo"
rm -f "$fifo"; mkfifo "$fifo"
python3 tests/upstream/upstream.py --port 0 --latency-ms "$latency_ms" >"$fifo" 2>"$out/upstream.log" &
pids+=($!)
read -r line <"$fifo"
upstream="${line#listening on }"
echo "upstream: $upstream (latency $latency_ms ms)"

serve() { # PORT [extra flags…]
    local port=$1; shift
    "$bin" serve --listen "127.0.0.1:$port" --plugin "$rag" --max-active 20 --max-waiting 200 \
        --wait-ms 60000 --outbound-allow "$upstream" \
        --plugin-config "upstream=$upstream" --plugin-config model=demo \
        --access-log false "$@" 2>>"$out/serve-$port.log" &
    pids+=($!)
    wait_for "http://127.0.0.1:$port/readyz"
}

stats() { curl -sf "$upstream/stats"; }
reset() { curl -sf -X POST "$upstream/stats/reset" >/dev/null; }

summary() { # NAME DIR…
    local name=$1; shift
    python3 - "$name" "$seconds" "$(stats)" "$@" <<'EOF'
import json, sys
name, seconds, stats = sys.argv[1], float(sys.argv[2]), json.loads(sys.argv[3])
runs = [json.load(open(f"{d}/summary.json")) for d in sys.argv[4:]]
total = sum(r["requests"] for r in runs)
ok = sum(r["statuses"].get("200", 0) for r in runs)
plateau = sum(r["plateau"]["requests_per_s"] or 0 for r in runs)
print(f"{name}: {total} requests, {ok} answered 200, plateau {plateau:.2f} req/s "
      f"(20 slots / 2 s predicts 10); upstream saw {stats['requests']} requests, "
      f"at most {stats['max_in_flight']} at once")
for r in runs:
    lat = r["latency_ms"] or {}
    print(f"   {r['settings']['url']}: {r['requests']} requests, plateau "
          f"{r['plateau']['requests_per_s']} req/s, latency ms {json.dumps(lat)}")
EOF
}

# One replica: the gate in front of the model.
port=$(free_port)
serve "$port"
reset
"$bin" load --url "http://127.0.0.1:$port/retrieve" --users 60 --spawn-rate 5 \
    --duration "$seconds" --timeout-s 120 --output "$out/one" --quiet
summary "one replica, --max-active 20" "$out/one"
stats >"$out/one/upstream-stats.json"

# Three replicas sharing a global limit of 20 on Redis.
redis_port=$(free_port)
redis-server --port "$redis_port" --bind 127.0.0.1 --save '' --appendonly no >"$out/redis.log" 2>&1 &
pids+=($!)
for _ in $(seq 1 100); do redis-cli -p "$redis_port" ping >/dev/null 2>&1 && break; sleep 0.1; done
ports=()
for _ in 1 2 3; do
    p=$(free_port)
    serve "$p" --redis-url "redis://127.0.0.1:$redis_port" --global-max-active 20 \
        --global-max-waiting 1000
    ports+=("$p")
done
# Past the grace the fresh Redis opens: no global lease for one TTL (docs/SCALE.md).
for _ in $(seq 1 300); do
    curl -sf "http://127.0.0.1:${ports[0]}/state" |
        python3 -c 'import json, sys; sys.exit(json.load(sys.stdin)["global"]["grace_ms"] != 0)' && break
    sleep 0.1
done
reset
dirs=()
loads=()
for p in "${ports[@]}"; do
    "$bin" load --url "http://127.0.0.1:$p/retrieve" --users 20 --spawn-rate 5 \
        --duration "$seconds" --timeout-s 120 --output "$out/three-$p" --quiet >/dev/null &
    loads+=($!)
    dirs+=("$out/three-$p")
done
wait "${loads[@]}"
summary "three replicas, --global-max-active 20" "${dirs[@]}"
stats >"$out/three-upstream-stats.json"
