/** The MySQL / MariaDB `'table'` strategy's operator statements (see sql/table-inspect.ts). */
import type { InspectStatements } from '../sql/table-inspect.js'
import { withClock } from '../sql/table-statements.js'
import { NOW_MS } from './mysql-client.js'

const RAW = {
  holders: `SELECT CAST(owner AS CHAR) AS owner, kind, expires_at AS expiresAt, CAST(token AS CHAR) AS token,
    CAST(permits AS CHAR) AS permits FROM latchkey_holders WHERE lock_key IN (?, ?) AND delay_until > NOW_MS`,
  waiters:
    'SELECT CAST(owner AS CHAR) AS owner, kind, seq FROM latchkey_waiters WHERE lock_key IN (?, ?) AND expires_at > NOW_MS',
  // LEFT and LENGTH count bytes of a VARBINARY key and of the bound prefix alike.
  keys: `SELECT lock_key AS k FROM latchkey_holders WHERE LEFT(lock_key, LENGTH(?)) = ? AND delay_until > NOW_MS
    UNION SELECT lock_key FROM latchkey_waiters WHERE LEFT(lock_key, LENGTH(?)) = ? AND expires_at > NOW_MS`,
} as const

export const MYSQL_INSPECT_SQL: InspectStatements = { ...withClock(RAW, NOW_MS), keysArity: 4 }
