/** The outbox's and the inbox's own tables, per dialect. `p` is a checked table prefix. */
import { columnTypes, type Dialect } from '../store/schema.js'

/** The three SQL dialects the outbox and inbox run on. */
export type OutboxDialect = Dialect

/** Idempotent CREATE statements of the outbox table (`<p>outbox`). */
export function outboxSchema(dialect: OutboxDialect, p: string): string[] {
  const { key, text, big, serial, engine } = columnTypes(dialect)
  // The relay reads one partition's pending rows in insert order: (part, status, seq) serves that scan.
  // MySQL has no CREATE INDEX IF NOT EXISTS, so its index is declared inside CREATE TABLE.
  const inline = dialect === 'mysql' ? ', INDEX (part, status, seq)' : ''
  return [
    `CREATE TABLE IF NOT EXISTS ${p}outbox (
      seq ${serial}, message_id ${key} NOT NULL UNIQUE, topic ${key} NOT NULL, msg_key ${key} NOT NULL,
      part INTEGER NOT NULL, payload ${text} NOT NULL, headers ${text}, status VARCHAR(16) NOT NULL,
      attempts INTEGER NOT NULL, next_attempt_at ${big} NOT NULL, last_error ${text},
      created_at ${big} NOT NULL, sent_at ${big}${inline})${engine}`,
    ...(dialect === 'mysql' ? [] : [`CREATE INDEX IF NOT EXISTS ${p}outbox_part ON ${p}outbox (part, status, seq)`]),
  ]
}

/** Idempotent CREATE statement of the inbox table (`<p>inbox`): one row per consumed message id. */
export function inboxSchema(dialect: OutboxDialect, p: string): string[] {
  const { key, big, engine } = columnTypes(dialect)
  return [
    `CREATE TABLE IF NOT EXISTS ${p}inbox (message_id ${key} NOT NULL PRIMARY KEY, consumed_at ${big} NOT NULL)${engine}`,
  ]
}

/** The insert that claims a message id, a no-op (0 rows) when the id is already there. */
export function insertIgnore(dialect: OutboxDialect, table: string, columns: string): string {
  const marks = columns
    .split(',')
    .map(() => '?')
    .join(', ')
  if (dialect === 'mysql') return `INSERT IGNORE INTO ${table} (${columns}) VALUES (${marks})`
  if (dialect === 'sqlite') return `INSERT OR IGNORE INTO ${table} (${columns}) VALUES (${marks})`
  return `INSERT INTO ${table} (${columns}) VALUES (${marks}) ON CONFLICT DO NOTHING`
}

/**
 * Idempotent CREATE statement of the relay membership table (`<p>outbox_relays`): one row per running relay with
 * the time of its last heartbeat, so relays can count each other and split the partitions between them.
 */
export function relaysSchema(dialect: OutboxDialect, p: string): string[] {
  const { key, big, engine } = columnTypes(dialect)
  return [
    `CREATE TABLE IF NOT EXISTS ${p}outbox_relays (relay_id ${key} NOT NULL PRIMARY KEY, seen_at ${big} NOT NULL)${engine}`,
  ]
}

/** The heartbeat write of a relay: insert its row, or move its `seen_at` forward. */
export function upsertHeartbeat(dialect: OutboxDialect, table: string): string {
  if (dialect === 'mysql') {
    return `INSERT INTO ${table} (relay_id, seen_at) VALUES (?, ?) ON DUPLICATE KEY UPDATE seen_at = VALUES(seen_at)`
  }
  return `INSERT INTO ${table} (relay_id, seen_at) VALUES (?, ?) ON CONFLICT (relay_id) DO UPDATE SET seen_at = excluded.seen_at`
}
