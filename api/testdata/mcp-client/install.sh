#!/usr/bin/env bash
# Installs the official TypeScript MCP SDK that client.mjs imports into a
# cache directory outside the repository (npm's registry is the only
# network access needed). api/mcp_sdk_test.go finds it in the same place:
#   SVC_NPM_CACHE (default /tmp/svc-mcp-client)/node_modules
# Run it once per machine; it is a no-op when the pinned version is there.
set -euo pipefail
dir="${SVC_NPM_CACHE:-/tmp/svc-mcp-client}"
version="1.32.2"
pkg="$dir/node_modules/@modelcontextprotocol/sdk/package.json"
if [ -f "$pkg" ] && grep -q "\"version\": \"$version\"" "$pkg"; then
  echo "@modelcontextprotocol/sdk@$version is already in $dir"
  exit 0
fi
mkdir -p "$dir"
cd "$dir"
[ -f package.json ] || printf '{"name":"svc-mcp-client","private":true,"type":"module"}\n' >package.json
npm install --no-audit --no-fund --save-exact "@modelcontextprotocol/sdk@$version" >/dev/null
echo "installed @modelcontextprotocol/sdk@$version into $dir"
