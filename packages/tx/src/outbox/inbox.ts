import { type CallerTrx, trxRunner } from './caller-trx.js'
import { inboxSchema, insertIgnore } from './schema.js'
import { openStoreDb, type StoreOptions } from './store-db.js'

/** Options of {@link createInbox}: the consumer's own database (the one its effects are written to). */
export type InboxOptions = StoreOptions

/** What `inbox.once` did: ran `fn` (first delivery of that id) or skipped it (a duplicate). */
export type OnceResult<T> = { ran: true; value: T } | { ran: false }

/** Dedupe of consumed messages, in the consumer's own transaction. */
export interface Inbox {
  /**
   * Claims `messageId` by an insert-ignore in the caller's transaction `trx`, then runs `fn(trx)` when the id was
   * new. The claim commits or rolls back with `fn`'s writes, so a message's effect happens once however often
   * it is delivered; a concurrent delivery of the same id waits on the claim's row lock and then skips.
   * On SQLite (synchronous transactions) the claim and `fn` run before `once` returns, and `fn`'s own work must
   * be synchronous, as everything inside `db.transaction(...)` is.
   */
  once<T>(trx: CallerTrx, messageId: string, fn: (trx: CallerTrx) => T | Promise<T>): Promise<OnceResult<T>>
  /** Creates the inbox table if missing (`once` does it on first use too). */
  ready(): Promise<void>
  /** Forgets ids consumed more than `olderThanMs` ago (after that a redelivery would run again). */
  purge(olderThanMs: number): Promise<number>
  /** Closes the inbox's own connection. */
  close(): Promise<void>
}

/**
 * An inbox table next to the consumer's data: at-least-once delivery plus `once` gives an exactly-once effect.
 *
 * @example
 * const inbox = createInbox({ store: 'postgres://postgres@127.0.0.1:5432/billing' })
 * await client.query('BEGIN')
 * await inbox.once(client, msg.properties.messageId, async (trx) => trx.query('UPDATE accounts ...'))
 * await client.query('COMMIT')
 * channel.ack(msg)
 */
export function createInbox(options: InboxOptions): Inbox {
  const db = openStoreDb(options, 'createInbox')
  const table = `${db.prefix}inbox`
  const schema = inboxSchema(db.dialect, db.prefix)
  const claim = insertIgnore(db.dialect, table, 'message_id, consumed_at')
  const ready = () => db.ensure(schema)
  return {
    once<T>(trx: CallerTrx, messageId: string, fn: (trx: CallerTrx) => T | Promise<T>): Promise<OnceResult<T>> {
      if (typeof messageId !== 'string' || messageId.length === 0 || messageId.length > 191) {
        throw new TypeError(
          `latchkey-tx: inbox.once messageId must be a non-empty string of at most 191 chars, received ${String(messageId)}`,
        )
      }
      if (typeof fn !== 'function') {
        throw new TypeError(`latchkey-tx: inbox.once needs a function, received ${typeof fn}`)
      }
      const runner = trxRunner(trx, db.dialect, 'inbox.once')
      if (runner.dialect === 'sqlite') {
        for (const statement of schema) runner.sync(statement, [])
        if (runner.sync(claim, [messageId, Date.now()]) === 0) return Promise.resolve({ ran: false })
        // Called synchronously: a throw reaches db.transaction(...), which rolls the claim back with the rest.
        const value = fn(trx)
        return Promise.resolve(value).then((v) => ({ ran: true, value: v }))
      }
      // DDL commits implicitly on MySQL: the table is made on the inbox's own connection, never in trx.
      return ready().then(async () => {
        if ((await runner.run(claim, [messageId, Date.now()])) === 0) return { ran: false }
        return { ran: true, value: await fn(trx) }
      })
    },
    ready,
    async purge(olderThanMs) {
      if (!Number.isFinite(olderThanMs) || olderThanMs < 0) {
        throw new RangeError(`latchkey-tx: inbox.purge olderThanMs must be >= 0, received ${olderThanMs}`)
      }
      await ready()
      return (await db.query(`DELETE FROM ${table} WHERE consumed_at < ?`, [Date.now() - olderThanMs])).affected
    },
    close: () => db.close(),
  }
}
