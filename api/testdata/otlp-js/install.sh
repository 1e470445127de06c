#!/usr/bin/env bash
# Installs the OpenTelemetry JavaScript SDK and its two OTLP/HTTP trace
# exporters (JSON and protobuf) that export.mjs uses into a cache directory
# outside the repository (npm's registry is the only network access
# needed). api/traces_node_test.go finds them in the same place:
#   SVC_OTLP_JS (default /tmp/svc-otlp-js)/node_modules
# Run it once per machine; it is a no-op when the pinned versions are there.
set -euo pipefail
dir="${SVC_OTLP_JS:-/tmp/svc-otlp-js}"
exporters="0.222.0"
sdk="2.12.1"
pkg="$dir/node_modules/@opentelemetry/exporter-trace-otlp-proto/package.json"
if [ -f "$pkg" ] && grep -q "\"version\": \"$exporters\"" "$pkg"; then
  echo "the OpenTelemetry JS exporters $exporters are already in $dir"
  exit 0
fi
mkdir -p "$dir"
cd "$dir"
[ -f package.json ] || printf '{"name":"svc-otlp-js","private":true,"type":"module"}\n' >package.json
npm install --no-audit --no-fund --save-exact \
  "@opentelemetry/exporter-trace-otlp-http@$exporters" "@opentelemetry/exporter-trace-otlp-proto@$exporters" \
  "@opentelemetry/sdk-trace-base@$sdk" "@opentelemetry/resources@$sdk" >/dev/null
echo "installed the OpenTelemetry JS exporters $exporters and SDK $sdk into $dir"
