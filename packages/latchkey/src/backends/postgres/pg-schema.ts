/**
 * The PostgreSQL schema of latchkey: the MySQL backend's `'table'` tables, with BYTEA keys (a lock key may
 * hold a NUL byte, which TEXT refuses) and TEXT owners. `latchkey_locks` keeps one row per lock name ever
 * used: the row each acquire transaction locks first, holding the lock's fencing and queue counters, which
 * therefore never go back when holder rows are deleted.
 */

import { type TableStatements, withClock } from '../sql/table-statements.js'
import { NOW_MS } from './pg-client.js'

/** The tables, one statement each, in the order to run them. Run by the backend on first use. */
export const POSTGRES_MIGRATION_STATEMENTS: readonly string[] = Object.freeze([
  `CREATE TABLE IF NOT EXISTS latchkey_locks (
  lock_key BYTEA  NOT NULL PRIMARY KEY,
  fence    BIGINT NOT NULL DEFAULT 0,
  seq      BIGINT NOT NULL DEFAULT 0
)`,
  `CREATE TABLE IF NOT EXISTS latchkey_holders (
  lock_key    BYTEA  NOT NULL,
  owner       TEXT   NOT NULL,
  kind        TEXT   NOT NULL,
  expires_at  BIGINT NOT NULL,
  delay_until BIGINT NOT NULL,
  token       BIGINT NOT NULL,
  permits     BIGINT NOT NULL DEFAULT 0,
  PRIMARY KEY (lock_key, owner)
)`,
  `CREATE TABLE IF NOT EXISTS latchkey_waiters (
  lock_key   BYTEA  NOT NULL,
  owner      TEXT   NOT NULL,
  kind       TEXT   NOT NULL,
  seq        BIGINT NOT NULL,
  expires_at BIGINT NOT NULL,
  PRIMARY KEY (lock_key, owner)
)`,
])

/**
 * The same migration as one SQL script, for migration tools.
 *
 * @example
 * await client.query(POSTGRES_MIGRATION)
 */
export const POSTGRES_MIGRATION = `${POSTGRES_MIGRATION_STATEMENTS.join(';\n\n')};\n`

/** The channel every release is announced on; the payload is {@link channelPayload} of the lock key. */
export const RELEASE_CHANNEL = 'latchkey_release'

/**
 * Upgrades a `latchkey_holders` table created before semaphore holders recorded their permit count (0 for the
 * other kinds and for rows of older versions: never compared). The backend runs it on first use only when
 * {@link POSTGRES_HAS_PERMITS} finds no such column: even with IF NOT EXISTS, ALTER TABLE takes an exclusive lock.
 */
export const POSTGRES_ADD_PERMITS =
  'ALTER TABLE latchkey_holders ADD COLUMN IF NOT EXISTS permits BIGINT NOT NULL DEFAULT 0'

/** Counts the `permits` column of `latchkey_holders` in the current schema (0 or 1). */
export const POSTGRES_HAS_PERMITS = `SELECT count(*)::int AS n FROM information_schema.columns
  WHERE table_schema = current_schema() AND table_name = 'latchkey_holders' AND column_name = 'permits'`

const HOLDER_COLS =
  'owner, kind, expires_at::text AS "expiresAt", delay_until::text AS "delayUntil", token::text AS token, permits::text AS permits'

const RAW = {
  lockKey:
    'SELECT fence::text AS fence, seq::text AS seq, NOW_MS::text AS now FROM latchkey_locks WHERE lock_key = $1 FOR UPDATE',
  ensureKey: 'INSERT INTO latchkey_locks (lock_key) VALUES ($1) ON CONFLICT (lock_key) DO NOTHING',
  holders: `SELECT ${HOLDER_COLS}, NOW_MS::text AS now FROM latchkey_holders WHERE lock_key = $1 FOR UPDATE`,
  waiters:
    'SELECT owner, kind, seq::text AS seq, expires_at::text AS "expiresAt" FROM latchkey_waiters WHERE lock_key = $1 FOR UPDATE',
  deleteHolders: 'DELETE FROM latchkey_holders WHERE lock_key = $1 AND owner = ANY($2::text[])',
  deleteWaiters: 'DELETE FROM latchkey_waiters WHERE lock_key = $1 AND owner = ANY($2::text[])',
  insertHolder:
    'INSERT INTO latchkey_holders (lock_key, owner, kind, expires_at, delay_until, token, permits) VALUES ($1, $2, $3, $4, $5, $6, $7)',
  upsertWaiter: `INSERT INTO latchkey_waiters (lock_key, owner, kind, seq, expires_at) VALUES ($1, $2, $3, $4, $5)
    ON CONFLICT (lock_key, owner) DO UPDATE SET expires_at = EXCLUDED.expires_at`,
  saveCounters: 'UPDATE latchkey_locks SET fence = $1, seq = $2 WHERE lock_key = $3',
  // The TTL comes twice ($1, $2): the statements of both dialects take the same values (MySQL has no $n).
  renew: `UPDATE latchkey_holders SET expires_at = n.ms + $1, delay_until = n.ms + $2 + (delay_until - expires_at)
    FROM (SELECT NOW_MS AS ms) n WHERE lock_key = $3 AND owner = $4 AND expires_at > n.ms`,
  // NOTIFY is sent at commit, and only when a row was deleted.
  release: `WITH d AS (DELETE FROM latchkey_holders WHERE lock_key = $1 AND owner = $2 AND expires_at > NOW_MS RETURNING 1)
    SELECT pg_notify($3, $4) FROM d`,
  leave: `WITH d AS (DELETE FROM latchkey_waiters WHERE lock_key = $1 AND owner = $2 RETURNING 1)
    SELECT pg_notify($3, $4) FROM d`,
  summary: `SELECT count(*)::int AS n, coalesce(min(delay_until), 0)::text AS "firstFree",
    coalesce(max(delay_until), 0)::text AS "lastFree", count(*) FILTER (WHERE owner = $1)::int AS mine,
    NOW_MS::text AS now, coalesce(max(permits), 0)::text AS permits
    FROM latchkey_holders WHERE lock_key = $2 AND delay_until > NOW_MS`,
  countLive: 'SELECT count(*)::int AS n FROM latchkey_holders WHERE lock_key = $1 AND delay_until > NOW_MS',
  dropHolders: 'DELETE FROM latchkey_holders WHERE lock_key = $1',
  dropWaiters: 'DELETE FROM latchkey_waiters WHERE lock_key = $1',
  notify: 'SELECT pg_notify($1, $2)',
} as const

/** The `'table'` strategy's statements ({@link TableStatements}): `$n` parameters only; keys and owners are never spliced in. */
export const PG_SQL = withClock(RAW, NOW_MS) satisfies TableStatements
