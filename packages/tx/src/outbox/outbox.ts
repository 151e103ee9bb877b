import { randomUUID } from 'node:crypto'
import { type CallerTrx, trxRunner } from './caller-trx.js'
import { partitionOf } from './partition.js'
import { OutboxRelay, type RelayOptions } from './relay.js'
import { outboxSchema } from './schema.js'
import { openStoreDb, type StoreOptions } from './store-db.js'
import type { OutboxMessage } from './types.js'

/** Options of {@link createOutbox}. */
export interface OutboxOptions extends StoreOptions {
  /**
   * Relay partitions: a key's messages all land in partition `hash(key) % partitions`, and each partition is
   * relayed by one leased relay at a time. Default 8. Every writer and relay of one table must agree on it.
   */
  partitions?: number
}

/** The transactional outbox of one database. */
export interface Outbox {
  /**
   * Inserts `message` in the caller's open transaction, so it commits or rolls back with the business write.
   * Resolves to the message id. On SQLite the row is written before this returns (inside `db.transaction`).
   */
  add(trx: CallerTrx, message: OutboxMessage): Promise<string>
  /** Starts a relay that publishes committed rows (see {@link RelayOptions}); stop it with `close()`. */
  relay(options: RelayOptions): OutboxRelay
  /** Puts a dead-lettered message back to pending with zero attempts. Resolves false when it is not dead. */
  requeue(messageId: string): Promise<boolean>
  /** Gives up a dead-lettered message for good, so its key's later messages flow again. */
  discard(messageId: string): Promise<boolean>
  /** Deletes sent rows older than `olderThanMs`; resolves to how many. */
  purgeSent(olderThanMs: number): Promise<number>
  /** Creates the outbox table if missing (`add` does it on first use too). */
  ready(): Promise<void>
  /** Stops the relays this outbox started and closes its own connection. */
  close(): Promise<void>
}

const COLUMNS = 'message_id, topic, msg_key, part, payload, headers, status, attempts, next_attempt_at, created_at'

/**
 * A transactional outbox in PostgreSQL, MySQL/MariaDB or SQLite: `add` in the business transaction, a leased
 * relay publishes with broker confirms, at least once, in insert order per key.
 *
 * @example
 * const outbox = createOutbox({ store: 'postgres://postgres@127.0.0.1:5432/shop' })
 * await client.query('BEGIN')
 * await client.query('INSERT INTO orders ...')
 * await outbox.add(client, { topic: 'order.created', key: orderId, payload: { orderId } })
 * await client.query('COMMIT')
 * const relay = outbox.relay({ publisher: rabbitPublisher({ url: 'amqp://127.0.0.1:5672', exchange: 'shop' }) })
 */
export function createOutbox(options: OutboxOptions): Outbox {
  const db = openStoreDb(options, 'createOutbox')
  const partitions = options.partitions ?? 8
  if (!Number.isInteger(partitions) || partitions < 1 || partitions > 1024) {
    throw new RangeError(`latchkey-tx: createOutbox partitions must be an integer 1..1024, received ${partitions}`)
  }
  const table = `${db.prefix}outbox`
  const schema = outboxSchema(db.dialect, db.prefix)
  const relays = new Set<OutboxRelay>()
  const ready = () => db.ensure(schema)
  const setStatus = async (id: string, from: string, to: string, reset: boolean) => {
    await ready()
    const extra = reset ? ', attempts = 0, next_attempt_at = 0' : ''
    const sql = `UPDATE ${table} SET status = ?${extra} WHERE message_id = ? AND status = ?`
    return (await db.query(sql, [to, checkText('messageId', id), from])).affected === 1
  }
  return {
    add(trx, message) {
      const values = rowValues(message, partitions)
      const runner = trxRunner(trx, db.dialect, 'outbox.add')
      const sql = `INSERT INTO ${table} (${COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, 'pending', 0, 0, ?)`
      if (runner.dialect === 'sqlite') {
        // better-sqlite3 transactions are synchronous: the row must be written before add returns. SQLite DDL
        // is transactional, so creating the table in the caller's transaction is safe there.
        for (const statement of schema) runner.sync(statement, [])
        runner.sync(sql, values)
        return Promise.resolve(values[0] as string)
      }
      // MySQL commits implicitly on DDL: the table is made on the outbox's own connection, never in trx.
      return ready()
        .then(() => runner.run(sql, values))
        .then(() => values[0] as string)
    },
    relay(relayOptions) {
      const relay = new OutboxRelay(db, partitions, relayOptions, () => relays.delete(relay))
      relays.add(relay)
      return relay
    },
    requeue: (id) => setStatus(id, 'dead', 'pending', true),
    discard: (id) => setStatus(id, 'dead', 'discarded', false),
    async purgeSent(olderThanMs) {
      if (!Number.isFinite(olderThanMs) || olderThanMs < 0) {
        throw new RangeError(`latchkey-tx: purgeSent olderThanMs must be >= 0, received ${olderThanMs}`)
      }
      await ready()
      const sql = `DELETE FROM ${table} WHERE status = 'sent' AND sent_at < ?`
      return (await db.query(sql, [Date.now() - olderThanMs])).affected
    },
    ready,
    async close() {
      await Promise.all([...relays].map((relay) => relay.close()))
      await db.close()
    },
  }
}

function checkText(name: string, value: unknown): string {
  if (typeof value !== 'string' || value.length === 0 || value.length > 191) {
    throw new TypeError(
      `latchkey-tx: ${name} must be a non-empty string of at most 191 chars, received ${String(value)}`,
    )
  }
  return value
}

/** Checks a message (no I/O) and returns its column values in {@link COLUMNS} order. */
function rowValues(message: OutboxMessage, partitions: number): unknown[] {
  if (typeof message !== 'object' || message === null) {
    throw new TypeError(`latchkey-tx: outbox.add needs a message object, received ${String(message)}`)
  }
  const topic = checkText('message.topic', message.topic)
  const key = checkText('message.key', message.key)
  const id = message.id === undefined ? randomUUID() : checkText('message.id', message.id)
  const payload = JSON.stringify(message.payload)
  if (payload === undefined) {
    throw new TypeError(`latchkey-tx: message.payload must be JSON-serializable, received ${typeof message.payload}`)
  }
  const headers = message.headers ?? {}
  for (const [name, value] of Object.entries(headers)) {
    if (typeof value !== 'string') {
      throw new TypeError(`latchkey-tx: message.headers.${name} must be a string, received ${typeof value}`)
    }
  }
  return [id, topic, key, partitionOf(key, partitions), payload, JSON.stringify(headers), Date.now()]
}
