/** The PostgreSQL `'table'` strategy's operator statements (see sql/table-inspect.ts). */
import type { InspectStatements } from '../sql/table-inspect.js'
import { withClock } from '../sql/table-statements.js'
import { NOW_MS } from './pg-client.js'

const RAW = {
  holders: `SELECT owner, kind, expires_at::text AS "expiresAt", token::text AS token, permits::text AS permits
    FROM latchkey_holders WHERE lock_key IN ($1, $2) AND delay_until > NOW_MS`,
  waiters:
    'SELECT owner, kind, seq::text AS seq FROM latchkey_waiters WHERE lock_key IN ($1, $2) AND expires_at > NOW_MS',
  keys: `SELECT lock_key AS k FROM latchkey_holders
      WHERE substring(lock_key FROM 1 FOR length($1::bytea)) = $1::bytea AND delay_until > NOW_MS
    UNION SELECT lock_key FROM latchkey_waiters
      WHERE substring(lock_key FROM 1 FOR length($1::bytea)) = $1::bytea AND expires_at > NOW_MS`,
} as const

export const PG_INSPECT_SQL: InspectStatements = { ...withClock(RAW, NOW_MS), keysArity: 1 }
