#!/usr/bin/env bash
# Installs playwright-core (the browser driver, without any browser
# download) that ui.test.mjs uses, into a cache directory outside the
# repository (npm's registry is the only network access needed). The
# browser is Debian's chromium (/usr/bin/chromium). e2e/ui_test.go finds
# the package in the same place:
#   SVC_UI_JS (default /tmp/svc-ui-js)/node_modules
# Run it once per machine; it is a no-op when the pinned version is there.
set -euo pipefail
dir="${SVC_UI_JS:-/tmp/svc-ui-js}"
version="1.65.1"
pkg="$dir/node_modules/playwright-core/package.json"
if [ -f "$pkg" ] && grep -q "\"version\": \"$version\"" "$pkg"; then
  echo "playwright-core $version is already in $dir"
  exit 0
fi
mkdir -p "$dir"
cd "$dir"
[ -f package.json ] || printf '{"name":"svc-ui-js","private":true,"type":"module"}\n' >package.json
PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 npm install --no-audit --no-fund --save-exact "playwright-core@$version" >/dev/null
echo "installed playwright-core $version into $dir"
