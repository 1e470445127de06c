#!/usr/bin/env bash
# OTLP ingest through the real binary (issue 16): exports of 1,000 GenAI
# spans POSTed to /v1/traces of a running svc, from -c clients at once,
# side by side with the official decoder's decode-only rate in the same
# load process, round after round (A B A B). The door answers once an
# export's spans are stored durably; then the script waits for the trace
# sweep (a cron workflow, every minute) to seal every trajectory.
#
#   bench/otlp-door.sh [-b sqlite|postgres] [-n 400] [-c 4] [-r 2] [-v]
#
# -v gives each span an input message of its own (otlpgen.GenAIVaried):
# without it every span carries the same text, which compresses far better
# than real prompts do. BENCH_SEALED=0 skips the wait for the seal.
# -b sqlite runs `svc dev` (the embedded default); -b postgres runs
# `svc serve` and `svc worker` on a new database of $DATABASE_URL (run it
# under go run ./internal/cmd/withpg --). Needs bin/svc (make build).
# docs/benchmarks.md, "Issue 16, session 11", has figures.
set -eu
cd "$(dirname "$0")/.."
B=sqlite N=400 C=4 R=2 V=
while getopts b:n:c:r:v o; do
  case $o in b) B=$OPTARG ;; n) N=$OPTARG ;; c) C=$OPTARG ;; r) R=$OPTARG ;; v) V=-varied ;; *) exit 2 ;; esac
done
case $B in sqlite) ;; postgres) [ -n "${DATABASE_URL:-}" ] || { echo "bench: -b postgres needs DATABASE_URL (run it under go run ./internal/cmd/withpg --)" >&2; exit 2; } ;; *) echo "bench: -b sqlite or postgres" >&2; exit 2 ;; esac
SVC=${SVC_BIN:-$PWD/bin/svc}
[ -x "$SVC" ] || { echo "bench: run make build first (needs bin/svc)" >&2; exit 2; }
work=$(mktemp -d /tmp/svc-otlp-XXXXXX)
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$work"' EXIT
. bench/lib.sh
go build -o "$work/otlpload" ./internal/cmd/otlpload
# An external trajectory is sealed one second after its last span, by the
# next run of the sweep.
export SVC_INGEST_IDLE_WINDOW=1s
"start_$B" 1
echo "svc ($B) at $URL"
"$work/otlpload" -url "$URL" -exports "$N" -clients "$C" -rounds "$R" $V -sealed "${BENCH_SEALED:-240s}"
