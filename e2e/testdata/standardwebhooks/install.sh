#!/usr/bin/env bash
# Installs the npm `standardwebhooks` library that verify.mjs imports into a
# cache directory outside the repository (npm's registry is the only network
# access needed). e2e/notifications_test.go finds it in the same place:
#   SVC_WEBHOOKS_CACHE (default /tmp/svc-standardwebhooks)/node_modules
# Run it once per machine; it is a no-op when the pinned version is there.
set -euo pipefail
dir="${SVC_WEBHOOKS_CACHE:-/tmp/svc-standardwebhooks}"
version="1.1.1"
pkg="$dir/node_modules/standardwebhooks/package.json"
if [ -f "$pkg" ] && grep -q "\"version\": \"$version\"" "$pkg"; then
  echo "standardwebhooks@$version is already in $dir"
  exit 0
fi
mkdir -p "$dir"
cd "$dir"
[ -f package.json ] || printf '{"name":"svc-standardwebhooks","private":true,"type":"module"}\n' >package.json
npm install --no-audit --no-fund --save-exact "standardwebhooks@$version" >/dev/null
echo "installed standardwebhooks@$version into $dir"
