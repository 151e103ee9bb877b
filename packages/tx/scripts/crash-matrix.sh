#!/usr/bin/env bash
# Crash at every step on every log: every traced crash point on SQLite, PostgreSQL and MariaDB (the normal test
# run takes a smoke subset of the points; `npm run test:full` runs these and every other full matrix). Needs the
# shared servers.
set -euo pipefail
cd "$(dirname "$0")/../../.."
LATCHKEY_FULL=1 npx vitest run packages/tx/test/crash-matrix.test.ts packages/tx/test/crash-matrix-sql.test.ts "$@"
