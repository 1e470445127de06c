#!/usr/bin/env bash
# OTLP protobuf ingest in spans/s (issue 16): the official decoder alone
# next to the door's whole path on SQLite and PostgreSQL (decode,
# normalise, store durably under the quota; then with the sweep sealing
# each export into a trajectory), in one run; and a concurrent variant
# (two clients a core exporting while the sweep seals, as a loaded
# service runs). docs/benchmarks.md, "Issue 16: OTLP ingest" and the
# "Issue 16, session N" sections, has figures; bench/otlp-door.sh measures
# the door through the real binary.
#
#   go run ./internal/cmd/withpg -- bench/otlp-ingest.sh [-benchtime 200x] [-count 2]
#
# SVC_BENCH_VARIED=1 gives each span an input message of its own text
# (otlpgen.GenAIVaried): the stored events then compress as text does,
# not as one message repeated.
#
# Each iteration is one export of 1,000 GenAI spans (an SDK batch); the
# spans/s column is over the whole benchmark time; decode-ms/op,
# export-ms/op and seal-ms/op split the sequential runs' time. The
# concurrent variant is timed until the last export is sealed: a run of
# 200 exports keeps that tail, and the start, to a small part of it.
#
# With PGCLUSTER_STAT_STATEMENTS=1 (withpg's server then loads
# pg_stat_statements) it also prints what PostgreSQL spent, statement by
# statement, over the whole run.
set -euo pipefail
cd "$(dirname "$0")/.."
: "${DATABASE_URL:?run under go run ./internal/cmd/withpg --}"
args=("$@")
[ ${#args[@]} -eq 0 ] && args=(-benchtime 200x -count 2)
if [ "${PGCLUSTER_STAT_STATEMENTS:-}" != 1 ]; then
	exec go test -run '^$' -bench 'OTLPIngest' "${args[@]}" ./internal/service/traceingest/
fi
psql "$DATABASE_URL" -qc "CREATE EXTENSION IF NOT EXISTS pg_stat_statements" >/dev/null
psql "$DATABASE_URL" -qAtc "SELECT pg_stat_statements_reset()" >/dev/null
go test -run '^$' -bench 'OTLPIngest/(decode|postgres)' "${args[@]}" ./internal/service/traceingest/
psql "$DATABASE_URL" -c "SELECT calls, round(total_exec_time::numeric, 1) AS ms,
  round((total_exec_time / calls)::numeric, 3) AS ms_per_call,
  left(regexp_replace(query, '\s+', ' ', 'g'), 110) AS statement
  FROM pg_stat_statements WHERE query NOT LIKE '%pg_stat_statements%' ORDER BY total_exec_time DESC LIMIT 15"
