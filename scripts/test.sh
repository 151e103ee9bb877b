#!/usr/bin/env bash
# The whole test suite on a fresh Debian machine with Node 20: installs the npm dependencies, builds, type-checks
# and lints, starts every server the tests need (scripts/servers/*.sh, once per run), then runs all tests.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
. scripts/lib/deps.sh
# Each phase's heading says when it began, so a slow or stuck run's output shows where the time went.
phase() { echo "== $1 (at ${SECONDS} s)"; }
check_node
ensure_deps
ensure_chromium
phase "build"
npm run build --silent
phase "typecheck and lint"
# The projects' type checks side by side (one core each; tsc prints each error with its file): 37 s one after
# another on a 2-core host. A failing one fails the run at its `wait`.
checks=()
for project in packages/latchkey packages/tx apps/*; do
  [ -f "$project/tsconfig.json" ] || continue
  npx tsc -p "$project/tsconfig.json" &
  checks+=($!)
done
for pid in "${checks[@]}"; do wait "$pid"; done
npx biome check .
phase "servers"
bash scripts/servers.sh start
phase "tests"
mkdir -p .data
status=0
npx vitest run --coverage --reporter=default --reporter=json --outputFile.json=.data/vitest.json "$@" || status=$?
node scripts/lib/summary.mjs .data/vitest.json || true
# The safety lab's smoke: one short fault run per backend (a holder paused between its check and its write), checked
# by the lab's own checker; it fails when the fence lets a stale write through or an update is lost (~40-55 s).
phase "safety lab smoke"
npm run lab --silent -- --smoke || status=1
phase "done, status $status"
exit "$status"
