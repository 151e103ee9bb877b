#!/usr/bin/env bash
# The main job on the embedded default backend (no server needed): installs what it needs, builds, runs the demo.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
. scripts/lib/deps.sh
check_node
ensure_deps
ensure_build
exec node --import tsx apps/flash-sale/src/cli.ts demo "$@"
