import { sqliteBackend } from '../../src/backends/sqlite/index.js'

/** Used by the conformance suite's child processes: every process opens the same SQLite file. */
export function createBackend() {
  const path = process.env.LATCHKEY_SQLITE_PATH
  if (path === undefined) throw new Error('LATCHKEY_SQLITE_PATH is not set')
  return sqliteBackend({ path })
}
