# Sourced by the README's commands: checks Node and installs the npm dependencies when the lock file changed.
check_node() {
  if ! command -v node >/dev/null 2>&1; then
    echo "latchkey needs Node.js 20 or newer (node not found)" >&2
    exit 1
  fi
  local major
  major=$(node -p 'process.versions.node.split(".")[0]')
  if [ "$major" -lt 20 ]; then
    echo "latchkey needs Node.js 20 or newer (found $(node --version))" >&2
    exit 1
  fi
}

# npm ci when node_modules is missing or was installed from another package-lock.json.
ensure_deps() {
  local want have=""
  want=$(sha256sum package-lock.json | cut -d' ' -f1)
  [ -f node_modules/.latchkey-lock-sha ] && have=$(cat node_modules/.latchkey-lock-sha)
  if [ "$want" != "$have" ]; then
    echo "== installing npm dependencies (npm ci)"
    npm ci --no-audit --no-fund
    echo "$want" > node_modules/.latchkey-lock-sha
  fi
}

# Builds the library (tsc) when its sources are newer than its dist.
ensure_build() {
  local stamp=packages/latchkey/dist/index.js
  if [ ! -f "$stamp" ] || [ -n "$(find packages/latchkey/src packages/latchkey/package.json -newer "$stamp" -print -quit)" ]; then
    echo "== building the latchkey package"
    npm run build --silent
  fi
}

# Debian's Chromium for the dashboard's end-to-end test (playwright-core drives /usr/bin/chromium).
ensure_chromium() {
  if ! command -v chromium >/dev/null 2>&1; then
    echo "== installing Debian chromium (for the dashboard e2e test)"
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null
  fi
}
