/**
 * The SQLite schema. One row per holder and per waiting-in-line owner; one global counter row for fencing
 * tokens (and one for queue order) that is only ever incremented, so tokens never go back even when every
 * lock row is deleted.
 */
export const SCHEMA = `
CREATE TABLE IF NOT EXISTS latchkey_holders (
  lock_key    TEXT    NOT NULL,
  owner       TEXT    NOT NULL,
  kind        TEXT    NOT NULL,
  expires_at  INTEGER NOT NULL,
  delay_until INTEGER NOT NULL,
  token       INTEGER NOT NULL,
  permits     INTEGER NOT NULL DEFAULT 0,
  PRIMARY KEY (lock_key, owner)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS latchkey_waiters (
  lock_key   TEXT    NOT NULL,
  owner      TEXT    NOT NULL,
  kind       TEXT    NOT NULL,
  seq        INTEGER NOT NULL,
  expires_at INTEGER NOT NULL,
  PRIMARY KEY (lock_key, owner)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS latchkey_counters (
  name  TEXT    PRIMARY KEY,
  value INTEGER NOT NULL
) WITHOUT ROWID;
INSERT OR IGNORE INTO latchkey_counters (name, value) VALUES ('fence', 0), ('queue', 0);
`

/**
 * Adds the semaphore holders' `permits` column (0 for other kinds: never compared) to a table created before it
 * existed. Run only when `holderColumns` lacks it, inside the schema transaction.
 */
export const ADD_PERMITS = 'ALTER TABLE latchkey_holders ADD COLUMN permits INTEGER NOT NULL DEFAULT 0'

export const SQL = {
  pruneHolders: 'DELETE FROM latchkey_holders WHERE lock_key = ? AND delay_until <= ?',
  pruneWaiters: 'DELETE FROM latchkey_waiters WHERE lock_key = ? AND expires_at <= ?',
  holders:
    'SELECT owner, kind, expires_at AS expiresAt, delay_until AS delayUntil, token, permits FROM latchkey_holders WHERE lock_key = ?',
  waiters: 'SELECT owner, kind, seq, expires_at AS expiresAt FROM latchkey_waiters WHERE lock_key = ?',
  nextFence: "UPDATE latchkey_counters SET value = value + 1 WHERE name = 'fence' RETURNING value",
  nextSeq: "UPDATE latchkey_counters SET value = value + 1 WHERE name = 'queue' RETURNING value",
  insertHolder:
    'INSERT INTO latchkey_holders (lock_key, owner, kind, expires_at, delay_until, token, permits) VALUES (?, ?, ?, ?, ?, ?, ?)',
  deleteWaiter: 'DELETE FROM latchkey_waiters WHERE lock_key = ? AND owner = ?',
  findWaiter: 'SELECT seq FROM latchkey_waiters WHERE lock_key = ? AND owner = ?',
  upsertWaiter: `INSERT INTO latchkey_waiters (lock_key, owner, kind, seq, expires_at) VALUES (?, ?, ?, ?, ?)
    ON CONFLICT (lock_key, owner) DO UPDATE SET expires_at = excluded.expires_at`,
  // SET expressions read the old row, so the lock-delay span (delay_until - expires_at) carries over.
  renew: `UPDATE latchkey_holders SET delay_until = ? + (delay_until - expires_at), expires_at = ?
    WHERE lock_key = ? AND owner = ? AND expires_at > ?`,
  release: 'DELETE FROM latchkey_holders WHERE lock_key = ? AND owner = ? AND expires_at > ?',
  countLive: 'SELECT count(*) AS n FROM latchkey_holders WHERE lock_key = ? AND delay_until > ?',
  sweepHolders: 'DELETE FROM latchkey_holders WHERE delay_until <= ?',
  sweepWaiters: 'DELETE FROM latchkey_waiters WHERE expires_at <= ?',
  dropHolders: 'DELETE FROM latchkey_holders WHERE lock_key = ?',
  dropWaiters: 'DELETE FROM latchkey_waiters WHERE lock_key = ?',
} as const
