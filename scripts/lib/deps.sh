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
    cache_sqlite_build
    echo "$want" > node_modules/.latchkey-lock-sha
  fi
}

# better-sqlite3 compiles from source here: its install step (prebuild-install) cannot reach GitHub for a prebuilt
# binary, and the compile takes about 2 minutes on 2 cores, nearly all of a fresh clone's `npm ci`. prebuild-install
# looks in npm's cache (_prebuilds) before it downloads, so the binary this machine compiled is packed there in
# prebuild's format, and the next npm ci here (another clone, a CI run) unpacks it instead of compiling again. The
# name carries the version, Node's ABI, the platform and the architecture. A binary that does not load is dropped
# from the cache and the addon compiled again.
cache_sqlite_build() {
  local cached
  [ -f node_modules/better-sqlite3/build/Release/better_sqlite3.node ] || return 0
  cached=$(npm_config_cache="$(npm config get cache)" node scripts/lib/sqlite-prebuild-path.cjs) || return 0
  if ! node -e "new (require('better-sqlite3'))(':memory:').close()" 2>/dev/null; then
    echo "== better-sqlite3 does not load: compiling it again"
    rm -f "$cached"
    npm_config_build_from_source=true npm rebuild better-sqlite3
  fi
  [ -f "$cached" ] && return 0
  mkdir -p "$(dirname "$cached")"
  tar -czf "$cached.$$" -C node_modules/better-sqlite3 build/Release/better_sqlite3.node && mv "$cached.$$" "$cached"
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
