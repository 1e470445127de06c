#!/usr/bin/env bash
# Scale: a no-op scorecard of N cases through the real `svc dev` binary,
# for each N given, each on a fresh data directory, to see what grows with
# the batch rather than with a case.
#
#   bench/scale.sh [-n 2000,100000] [-c 64] [-p 2] [-k]
#
#   -n  case counts, comma-separated (default 2000,100000); the first is the
#       reference the per-case time of the others is compared with
#   -c  concurrency (default 64)
#   -p  seconds between polls (default 2): GET /scorecards/:id?view=summary
#       and GET /ops/driver/batch/:id
#   -k  keep the work directory (each N's data directory, logs and dataset)
#       and print where it is, to start svc dev on it again and profile
#       the reads of a finished batch (SVC_PPROF_ADDR)
#
# The harness is /bin/true (no output, no grader): what is measured is the
# platform. Printed per N: the dataset's registration time, the submit time
# (POST /scorecards: the selection and manifest sealed, the record written,
# the workflow started), the run's wall time and time per case (and its
# ratio to the reference's), the peak RSS of the svc dev process (VmHWM
# from /proc/<pid>/status: API, worker and embedded Temporal in one
# process; the job server and harnesses are not in it), and the history
# length of each run of the workflow's chain (continue-as-new), as the
# largest length the polls saw for each run id: a run that ended between
# two polls shows the length at the last poll before it ended. Last, the
# size and time of one detail read of the finished batch (GET
# /scorecards/:id), and whether it was paged, and the slowest of the first
# five pages of GET /runs?scorecardId= (100 runs a page).
# Needs bin/svc and bin/svc-shim (make build).
set -eu
cd "$(dirname "$0")/.."
NS=2000,100000 C=64 P=2 KEEP=0
while getopts n:c:p:k o; do
  case $o in n) NS=$OPTARG ;; c) C=$OPTARG ;; p) P=$OPTARG ;; k) KEEP=1 ;; *) exit 2 ;; esac
done
SVC=${SVC_BIN:-$PWD/bin/svc}
[ -x "$SVC" ] && [ -x "$(dirname "$SVC")/svc-shim" ] || { echo "bench: run make build first (needs bin/svc and bin/svc-shim)" >&2; exit 2; }

work=$(mktemp -d /tmp/svc-scale-XXXXXX)
chmod 755 "$work"
if [ "$KEEP" = 1 ]; then
  trap 'kill $(jobs -p) 2>/dev/null || true; echo "kept: $work (svc dev on one: SVC_DATA_DIR=$work/n<N>/data bin/svc dev)"' EXIT
else
  trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$work"' EXIT
fi

now() { date +%s.%N; }
field() { grep -o "\"$1\":\"[^\"]*\"" | head -n1 | cut -d'"' -f4; }

# wait_url and the rest: bench/lib.sh.
. bench/lib.sh

# dataset N FILE: a dataset of N cases without graders.
dataset() {
  awk -v n="$1" 'BEGIN { printf "{\"id\":\"scale\",\"version\":\"1.0.0\",\"cases\":["
    for (i = 1; i <= n; i++) printf "%s{\"id\":\"c%06d\",\"task\":\"q%d\"}", (i > 1 ? "," : ""), i, i
    printf "]}" }' > "$2"
}

ref_per_case=""
echo "no-op scorecards through svc dev: cases $NS, concurrency $C, polled every ${P}s"
for n in ${NS//,/ }; do
  dir="$work/n$n"
  mkdir -p "$dir"
  dataset "$n" "$dir/dataset.json"
  SVC_DATA_DIR="$dir/data" SVC_ADDR=127.0.0.1:0 SVC_TEMPORAL_PORT=0 SVC_LOG_LEVEL=warn \
    SVC_MAX_BODY_BYTES=$((64 << 20)) "$SVC" dev > "$dir/svc.out" 2> "$dir/svc.err" &
  pid=$!
  url=$(wait_url "$dir/svc.out")
  curl -sf -XPOST "$url/harnesses" -H 'Content-Type: application/json' \
    -d '{"id":"noop","version":"1","kind":"process","command":["/bin/true"]}' >/dev/null
  t0=$(now)
  curl -sS -f -XPOST "$url/datasets" -H 'Content-Type: application/json' --data-binary @"$dir/dataset.json" > "$dir/register.out"
  t1=$(now)
  id=$(curl -sS -f -XPOST "$url/scorecards" -H 'Content-Type: application/json' \
    -d "{\"dataset\":{\"id\":\"scale\",\"version\":\"1.0.0\"},\"harness\":{\"id\":\"noop\",\"version\":\"1\"},\"concurrency\":$C}" | field id)
  t2=$(now)
  : > "$dir/history"
  while :; do
    sleep "$P"
    curl -sf "$url/ops/driver/batch/$id" > "$dir/driver.json" 2>/dev/null &&
      printf '%s %s\n' "$(field runId < "$dir/driver.json")" \
        "$(grep -o '"historyLength":[0-9]*' "$dir/driver.json" | head -n1 | cut -d: -f2)" >> "$dir/history"
    status=$(curl -sf "$url/scorecards/$id?view=summary" | field status || true)
    case $status in succeeded|failed|cancelled) break ;; esac
    kill -0 "$pid" 2>/dev/null || { echo "bench: svc dev exited (see $dir/svc.err)" >&2; exit 1; }
  done
  t3=$(now)
  # The detail read of the finished batch: whole up to 10,000 case-trials,
  # else its first page (X-Svc-Next-Cursor set).
  detail=$(curl -sf -D "$dir/detail.headers" -o /dev/null -w '%{size_download} %{time_total}' "$url/scorecards/$id")
  paged=whole
  grep -qi '^X-Svc-Next-Cursor:' "$dir/detail.headers" && paged="first page"
  # GET /runs?scorecardId= pages (limit 100, the first five, each by the
  # previous one's cursor): the time of each, the slowest printed.
  cursor="" runs_times=""
  for _ in 1 2 3 4 5; do
    t=$(curl -sf -D "$dir/runs.headers" -o /dev/null -w '%{time_total}' "$url/runs?scorecardId=$id&limit=100${cursor:+&cursor=$cursor}")
    runs_times="$runs_times $t"
    cursor=$(awk 'tolower($1) == "x-svc-next-cursor:" { gsub(/\r/, "", $2); print $2 }' "$dir/runs.headers")
    [ -n "$cursor" ] || break
  done
  hwm=$(awk '/^VmHWM/ { print $2 }' "/proc/$pid/status")
  kill -TERM "$pid" 2>/dev/null || true
  wait "$pid" 2>/dev/null || true
  per_case=$(echo "($t3 - $t2) * 1000 / $n" | bc -l)
  [ -n "$ref_per_case" ] || ref_per_case=$per_case
  awk -v n="$n" -v reg="$(echo "$t1 - $t0" | bc -l)" -v sb="$(echo "$t2 - $t1" | bc -l)" -v w="$(echo "$t3 - $t2" | bc -l)" \
    -v pc="$per_case" -v ref="$ref_per_case" -v hwm="$hwm" -v st="$status" \
    'BEGIN { printf "%7d cases: register %6.2f s  submit %6.2f s  run %8.1f s  %6.2f ms/case (x%.2f of the first)  svc dev VmHWM %5.0f MB  (%s)\n",
      n, reg, sb, w, pc, pc / ref, hwm / 1024, st }'
  # The largest history length seen for each run of the chain, in the
  # order the runs were first seen.
  awk '$2 != "" { if (!($1 in max)) order[++k] = $1; if ($2 + 0 > max[$1]) max[$1] = $2 + 0 }
    END { printf "          history length per chain run (%d runs seen):", k; for (i = 1; i <= k; i++) printf " %d", max[order[i]]; print "" }' "$dir/history"
  echo "$detail" | awk -v p="$paged" '{ printf "          detail read after the finish: %.1f MB in %.2f s (%s)\n", $1 / 1048576, $2, p }'
  echo "$runs_times" | awk '{ m = 0; for (i = 1; i <= NF; i++) if ($i > m) m = $i; printf "          GET /runs?scorecardId= pages of 100: %d read, slowest %.1f ms\n", NF, m * 1000 }'
done
