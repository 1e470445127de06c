#!/usr/bin/env bash
# Builds the Jaeger that the otel pull kind's real-server test runs
# (traces/pull/jaeger_test.go): Jaeger v2 (cmd/jaeger, the OpenTelemetry
# Collector-based all-in-one) from the Go module proxy, no release download.
# The binary lands in ${SVC_JAEGER_BIN:-$HOME/.cache/svc-jaeger/v1.76.0}/jaeger;
# a binary already there is kept, so only the first run on a machine pays the
# cold build. tools/jaeger has a go.mod of its own so svc's go.mod never
# requires Jaeger.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
bin="${SVC_JAEGER_BIN:-$HOME/.cache/svc-jaeger/v1.76.0}"
mkdir -p "$bin"
if [ -x "$bin/jaeger" ]; then
  echo "jaegertest: $bin/jaeger is already built"
  exit 0
fi
echo "jaegertest: building jaeger into $bin (cold: several minutes)"
start=$(date +%s)
# Built to a temporary name and renamed, so an interrupted build never leaves
# a half-written binary that the next run would take for a finished one.
(cd "$here/tools/jaeger" && GOFLAGS=-mod=mod go build -trimpath -o "$bin/jaeger.partial" github.com/jaegertracing/jaeger/cmd/jaeger)
mv "$bin/jaeger.partial" "$bin/jaeger"
echo "jaegertest: built jaeger in $(( $(date +%s) - start ))s"
