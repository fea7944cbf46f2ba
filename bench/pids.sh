# Sourced by the bench scripts: the servers a script started (PIDS), stopped gently then for sure.
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
