#!/usr/bin/env bash
# Crash at every step on every log: every traced crash point on SQLite, PostgreSQL and MariaDB (the normal test
# run takes every point on SQLite and a representative subset on the other two). Needs the shared servers.
set -euo pipefail
cd "$(dirname "$0")/../../.."
LATCHKEY_TX_CRASH_MATRIX=all npx vitest run packages/tx/test/crash-matrix.test.ts packages/tx/test/crash-matrix-sql.test.ts "$@"
