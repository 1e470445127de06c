#!/usr/bin/env bash
# What one 2,000-case scorecard costs PostgreSQL, statement by statement:
# runs one svc round of vs-promptfoo.sh on PostgreSQL and prints
# pg_stat_statements (calls, total execution ms, rows, the statement).
#
#   PGCLUSTER_STAT_STATEMENTS=1 go run ./internal/cmd/withpg -- bench/pg-statements.sh [vs-promptfoo.sh flags]
#
# withpg's throwaway server loads pg_stat_statements only with
# PGCLUSTER_STAT_STATEMENTS=1. Needs bin/svc (make build).
set -euo pipefail
cd "$(dirname "$0")/.."
: "${DATABASE_URL:?run under go run ./internal/cmd/withpg --}"
psql "$DATABASE_URL" -qc "CREATE EXTENSION IF NOT EXISTS pg_stat_statements" >/dev/null 2>&1
psql "$DATABASE_URL" -qc "ALTER SYSTEM SET pg_stat_statements.track_planning = on" -c "SELECT pg_reload_conf()" >/dev/null
psql "$DATABASE_URL" -qAtc "SELECT pg_stat_statements_reset()" >/dev/null
bench/vs-promptfoo.sh -b postgres -x -r 1 "$@"
psql "$DATABASE_URL" -c "SELECT calls, round(total_exec_time::numeric, 1) AS ms, rows,
  left(regexp_replace(query, '\s+', ' ', 'g'), 140) AS statement
  FROM pg_stat_statements WHERE query NOT LIKE '%pg_stat_statements%' ORDER BY total_exec_time DESC LIMIT 25"
echo "by calls:"
psql "$DATABASE_URL" -c "SELECT calls, round(total_exec_time::numeric, 1) AS ms, plans, round(total_plan_time::numeric, 1) AS plan_ms, rows,
  left(regexp_replace(query, '\s+', ' ', 'g'), 140) AS statement
  FROM pg_stat_statements WHERE query NOT LIKE '%pg_stat_statements%' ORDER BY calls DESC LIMIT 25"
psql "$DATABASE_URL" -Atc "SELECT 'all statements: ' || sum(calls) || ' calls, ' || round(sum(total_exec_time)::numeric) || ' ms executing, '
  || round(sum(total_plan_time)::numeric) || ' ms planning (' || sum(plans) || ' plans), ' || count(*) || ' distinct statements'
  FROM pg_stat_statements WHERE query NOT LIKE '%pg_stat_statements%'"
