# Functions the bench/ scripts share: starting the real svc binary on
# SQLite or PostgreSQL, and reading CPU time. Source it from the
# repository's root with SVC (the binary) and work (a scratch directory)
# set; start_postgres needs DATABASE_URL.

# cpu_ms PID: user+system CPU of PID and its reaped children, in ms.
# machine_jiffies: the machine's busy and total CPU time so far, in clock
# ticks (/proc/stat; idle and iowait are not busy). Kernel threads count,
# so the busy share shows whether the cores were saturated.
machine_jiffies() { awk '/^cpu / { t = 0; for (i = 2; i <= NF; i++) t += $i; print t - $5 - $6, t }' /proc/stat; }

# busy_line B0 T0 B1 T1: the machine's busy share between two readings.
busy_line() { awk -v b0="$1" -v t0="$2" -v b1="$3" -v t1="$4" 'BEGIN { if (t1 > t0) printf "  machine busy: %.0f%% of all cores (every process and kernel thread)\n", 100 * (b1 - b0) / (t1 - t0) }'; }

cpu_ms() { awk -v hz="$(getconf CLK_TCK)" '{ print ($14+$15+$16+$17) * 1000 / hz }' "/proc/$1/stat"; }

# wait_url FILE: the first http://127.0.0.1:PORT that FILE shows, once it answers /readyz.
wait_url() {
  local url=""
  for _ in $(seq 1 600); do
    url=$(grep -o 'http://127.0.0.1:[0-9]*' "$1" | head -n1 || true)
    [ -n "$url" ] && curl -sf "$url/readyz" >/dev/null 2>&1 && { echo "$url"; return; }
    sleep 0.1
  done
  echo "bench: no service answered (see $1)" >&2
  exit 1
}

free_port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }

# start_sqlite ROUND: svc dev; sets URL and PIDS.
start_sqlite() {
  local out="$work/svc-out-$1"
  SVC_DATA_DIR="$work/svc-data-$1" SVC_ADDR=127.0.0.1:0 SVC_TEMPORAL_PORT=0 SVC_LOG_LEVEL=warn "$SVC" dev > "$out" 2>"$out.err" &
  PIDS=$!
  URL=$(wait_url "$out")
}

# start_postgres ROUND: the production roles, svc serve + svc worker, on a new
# database of $DATABASE_URL, with a svc dev process as the Temporal cluster
# (its own worker polls another task queue and runs no local job); sets URL
# and PIDS (all three processes, whose CPU is counted).
start_postgres() {
  local dir="$work/pg-$1" tport db base query
  mkdir -p "$dir"
  tport=$(free_port)
  SVC_DATA_DIR="$dir/dev" SVC_ADDR=127.0.0.1:0 SVC_TEMPORAL_PORT=$tport SVC_TASK_QUEUE=bench-unused \
    SVC_LOCAL_RUNTIME=off SVC_LOG_LEVEL=warn "$SVC" dev > "$dir/dev.out" 2>"$dir/dev.err" &
  PIDS=$!
  wait_url "$dir/dev.out" >/dev/null
  db="svcbench_$1_$$"
  psql "$DATABASE_URL" -qc "CREATE DATABASE $db" >/dev/null
  base=${DATABASE_URL%%\?*}
  query=${DATABASE_URL#"$base"}
  export DATABASE_URL="${base%/*}/$db$query" TEMPORAL_ADDRESS=127.0.0.1:$tport
  # svc dev's Temporal requires mutual TLS with the client certificate of
  # its data dir (docs/operations.md).
  export TEMPORAL_TLS_CA="$dir/dev/temporal-tls/ca.pem" TEMPORAL_TLS_CERT="$dir/dev/temporal-tls/client.pem" \
    TEMPORAL_TLS_KEY="$dir/dev/temporal-tls/client-key.pem"
  "$SVC" migrate > "$dir/migrate.out" 2>&1
  SVC_ADDR=127.0.0.1:0 SVC_LOG_LEVEL=warn SVC_PPROF_ADDR=${BENCH_SERVE_PPROF:-} GOGC=${BENCH_SERVE_GOGC:-} "$SVC" serve > "$dir/serve.out" 2>"$dir/serve.err" &
  PIDS="$PIDS $!"
  SVC_DATA_DIR="$dir/worker" SVC_LOG_LEVEL=warn SVC_PPROF_ADDR=${BENCH_WORKER_PPROF:-} "$SVC" worker > "$dir/worker.out" 2>"$dir/worker.err" &
  PIDS="$PIDS $!"
  URL=$(wait_url "$dir/serve.out")
  for _ in $(seq 1 300); do grep -q 'polling task queue' "$dir/worker.out" && break; sleep 0.1; done
  export DATABASE_URL="${base}$query"
}

