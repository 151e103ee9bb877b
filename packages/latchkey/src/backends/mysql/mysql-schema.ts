/**
 * The MySQL / MariaDB schema of latchkey. Keys are VARBINARY so that names compare byte for byte (the
 * default collations are case-insensitive and ignore trailing spaces, which would merge distinct locks).
 *
 * - `latchkey_locks`: one row per lock name ever used, never deleted by the backend. It is the row every
 *   acquire transaction of that lock locks first (the serialisation point), and it keeps the lock's
 *   fencing counter and queue counter, which therefore never go back when holder rows are deleted
 *   (deleting and re-inserting a lock row would reset them: the research note saw a fence go back to 1).
 * - `latchkey_holders` / `latchkey_waiters`: the SQLite backend's schema (one row per holder / waiter).
 * - `latchkey_row_locks`, `latchkey_fences`: the `'for_update'` strategy's lock rows and token counters.
 */

import { type TableStatements, withClock } from '../sql/table-statements.js'
import { NOW_MS } from './mysql-client.js'

/** The tables, one statement each, in the order to run them. Run by the backend on first use. */
export const MYSQL_MIGRATION_STATEMENTS: readonly string[] = Object.freeze([
  `CREATE TABLE IF NOT EXISTS latchkey_locks (
  lock_key VARBINARY(2048) NOT NULL PRIMARY KEY,
  fence    BIGINT NOT NULL DEFAULT 0,
  seq      BIGINT NOT NULL DEFAULT 0
) ENGINE=InnoDB`,
  `CREATE TABLE IF NOT EXISTS latchkey_holders (
  lock_key    VARBINARY(2048) NOT NULL,
  owner       VARBINARY(128)  NOT NULL,
  kind        VARCHAR(16)     NOT NULL,
  expires_at  BIGINT NOT NULL,
  delay_until BIGINT NOT NULL,
  token       BIGINT NOT NULL,
  permits     BIGINT NOT NULL DEFAULT 0,
  PRIMARY KEY (lock_key, owner)
) ENGINE=InnoDB`,
  `CREATE TABLE IF NOT EXISTS latchkey_waiters (
  lock_key   VARBINARY(2048) NOT NULL,
  owner      VARBINARY(128)  NOT NULL,
  kind       VARCHAR(16)     NOT NULL,
  seq        BIGINT NOT NULL,
  expires_at BIGINT NOT NULL,
  PRIMARY KEY (lock_key, owner)
) ENGINE=InnoDB`,
  `CREATE TABLE IF NOT EXISTS latchkey_row_locks (
  lock_key VARBINARY(2048) NOT NULL PRIMARY KEY
) ENGINE=InnoDB`,
  `CREATE TABLE IF NOT EXISTS latchkey_fences (
  lock_key    VARBINARY(2048) NOT NULL PRIMARY KEY,
  value       BIGINT NOT NULL,
  holder_conn BIGINT NOT NULL
) ENGINE=InnoDB`,
])

/**
 * The same migration as one SQL script, for migration tools (statements end with `;`).
 *
 * @example
 * await connection.query(MYSQL_MIGRATION) // needs multipleStatements: true
 */
export const MYSQL_MIGRATION = `${MYSQL_MIGRATION_STATEMENTS.join(';\n\n')};\n`

/**
 * Upgrades a `latchkey_holders` table created before semaphore holders recorded their permit count (0 for the
 * other kinds, and for rows written by older versions: never compared). The backend runs it on first use when
 * {@link MYSQL_HAS_PERMITS} finds no such column (MySQL 8 has no `ADD COLUMN IF NOT EXISTS`).
 */
export const MYSQL_ADD_PERMITS = 'ALTER TABLE latchkey_holders ADD COLUMN permits BIGINT NOT NULL DEFAULT 0'

/** Counts the `permits` column of `latchkey_holders` in the current database (0 or 1). */
export const MYSQL_HAS_PERMITS = `SELECT COUNT(*) AS n FROM information_schema.columns
  WHERE table_schema = DATABASE() AND table_name = 'latchkey_holders' AND column_name = 'permits'`

const HOLDER_COLS =
  'CAST(owner AS CHAR) AS owner, kind, expires_at AS expiresAt, delay_until AS delayUntil, CAST(token AS CHAR) AS token, CAST(permits AS CHAR) AS permits'

const RAW_TABLE_SQL = {
  ensureKey: 'INSERT IGNORE INTO latchkey_locks (lock_key) VALUES (?)',
  lockKey: 'SELECT CAST(fence AS CHAR) AS fence, seq, NOW_MS AS now FROM latchkey_locks WHERE lock_key = ? FOR UPDATE',
  holders: `SELECT ${HOLDER_COLS}, NOW_MS AS now FROM latchkey_holders WHERE lock_key = ? FOR UPDATE`,
  waiters:
    'SELECT CAST(owner AS CHAR) AS owner, kind, seq, expires_at AS expiresAt FROM latchkey_waiters WHERE lock_key = ? FOR UPDATE',
  deleteHolders: 'DELETE FROM latchkey_holders WHERE lock_key = ? AND owner IN (?)',
  deleteWaiters: 'DELETE FROM latchkey_waiters WHERE lock_key = ? AND owner IN (?)',
  insertHolder:
    'INSERT INTO latchkey_holders (lock_key, owner, kind, expires_at, delay_until, token, permits) VALUES (?, ?, ?, ?, ?, ?, ?)',
  upsertWaiter: `INSERT INTO latchkey_waiters (lock_key, owner, kind, seq, expires_at) VALUES (?, ?, ?, ?, ?)
    ON DUPLICATE KEY UPDATE expires_at = VALUES(expires_at)`,
  saveCounters: 'UPDATE latchkey_locks SET fence = ?, seq = ? WHERE lock_key = ?',
  // MySQL assigns left to right and later expressions see earlier results, so delay_until (which needs
  // the old expires_at) comes first.
  renew: `UPDATE latchkey_holders SET delay_until = NOW_MS + ? + (delay_until - expires_at), expires_at = NOW_MS + ?
    WHERE lock_key = ? AND owner = ? AND expires_at > NOW_MS`,
  release: 'DELETE FROM latchkey_holders WHERE lock_key = ? AND owner = ? AND expires_at > NOW_MS',
  leave: 'DELETE FROM latchkey_waiters WHERE lock_key = ? AND owner = ?',
  summary: `SELECT COUNT(*) AS n, COALESCE(MIN(delay_until), 0) AS firstFree, COALESCE(MAX(delay_until), 0) AS lastFree,
    COALESCE(SUM(owner = ?), 0) AS mine, NOW_MS AS now, CAST(COALESCE(MAX(permits), 0) AS CHAR) AS permits
    FROM latchkey_holders WHERE lock_key = ? AND delay_until > NOW_MS`,
  countLive: 'SELECT COUNT(*) AS n FROM latchkey_holders WHERE lock_key = ? AND delay_until > NOW_MS',
  dropHolders: 'DELETE FROM latchkey_holders WHERE lock_key = ?',
  dropWaiters: 'DELETE FROM latchkey_waiters WHERE lock_key = ?',
} as const

/** The `'table'` strategy's statements. `?` placeholders only; keys and owners are always parameters. */
export const TABLE_SQL = withClock(RAW_TABLE_SQL, NOW_MS) satisfies TableStatements
