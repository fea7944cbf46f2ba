# Sourced by the bench scripts: the servers a script started (PIDS), stopped gently then for sure;
# waiting for one to be ready; its CPU time.
PIDS=()
stop_pid() {  # PID: SIGTERM, up to 10 s to exit, then SIGKILL
  local p="$1"; kill "$p" 2>/dev/null || true
  for _ in $(seq 1 100); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
  kill -9 "$p" 2>/dev/null || true
}
stop_all() {  # every PID in PIDS, all signalled first so they drain together
  local p
  for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${PIDS[@]}"; do stop_pid "$p"; done
}
wait_ready() {  # NAME PID URL LOG TRIES: polls URL every 0.1 s; fails if PID exits or TRIES run out
  local name="$1" pid="$2" url="$3" log="$4" tries="$5"
  for _ in $(seq 1 "$tries"); do
    kill -0 "$pid" 2>/dev/null || { echo "$name exited; log:" >&2; cat "$log" >&2; return 1; }
    curl -fsS -o /dev/null --max-time 1 "$url" 2>/dev/null && return 0
    sleep 0.1
  done
  echo "$name not ready after $tries tries" >&2; return 1
}
cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }  # PID: user + system clock ticks
