#!/usr/bin/env bash
# OTLP protobuf ingest in spans/s (issue 16): the official decoder alone
# next to the door's whole path on SQLite and PostgreSQL (decode,
# normalise, store durably under the quota; then with the sweep sealing
# each export into a trajectory), in one run.
#
#   go run ./internal/cmd/withpg -- bench/otlp-ingest.sh [-benchtime 40x] [-count 2]
#
# Each iteration is one export of 1,000 GenAI spans (an SDK batch); the
# spans/s column is over the whole benchmark time.
set -euo pipefail
cd "$(dirname "$0")/.."
: "${DATABASE_URL:?run under go run ./internal/cmd/withpg --}"
args=("$@")
[ ${#args[@]} -eq 0 ] && args=(-benchtime 40x -count 2)
exec go test -run '^$' -bench 'OTLPIngest' "${args[@]}" ./traceingest/
