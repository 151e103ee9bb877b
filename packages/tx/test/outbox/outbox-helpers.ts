/** Small shared steps of the outbox tests. */
import { expect } from 'vitest'
import type { Inbox, Outbox } from '../../src/outbox/index.js'
import type { BusinessDb } from './business-db.js'

/** Adds `message` in its own business transaction, committed (or rolled back when `rollback`). */
export async function addOne(
  db: BusinessDb,
  outbox: Outbox,
  message: { topic: string; key: string; id: string; payload: unknown },
  rollback = false,
): Promise<void> {
  const failure = new Error('rolled back on purpose')
  const done = db.tx<unknown>((trx) => {
    const added = outbox.add(trx, message)
    if (db.dialect === 'sqlite') {
      if (rollback) throw failure
      return added
    }
    return added.then(() => {
      if (rollback) throw failure
    })
  })
  if (rollback) await expect(done).rejects.toBe(failure)
  else await done
}

/** Per key, the ids in the order they were first delivered. */
export function firstDeliveryOrder(deliveries: readonly { id: string; key: string }[]): Map<string, string[]> {
  const seen = new Set<string>()
  const order = new Map<string, string[]>()
  for (const { id, key } of deliveries) {
    if (seen.has(id)) continue
    seen.add(id)
    order.set(key, [...(order.get(key) ?? []), id])
  }
  return order
}

/**
 * Consumes through the inbox on PostgreSQL: each delivery's effect (a row in `<prefix>effects`, with a serial
 * `n` recording effect order) is written in the same transaction as the inbox claim.
 */
export function inboxEffect(db: BusinessDb, inbox: Inbox) {
  return (delivery: { id: string; key: string }) =>
    db.tx(async (trx) => {
      await inbox.once(trx, delivery.id, () =>
        db.inTx(trx, `INSERT INTO ${db.prefix}effects (message_id, msg_key) VALUES (?, ?)`, [
          delivery.id,
          delivery.key,
        ]),
      )
    })
}

/** Per key, the message ids in effect order; and ids whose effect happened more than once. */
export async function effects(db: BusinessDb): Promise<{ order: Map<string, string[]>; repeated: string[] }> {
  const rows = await db.sql(`SELECT message_id, msg_key FROM ${db.prefix}effects ORDER BY n`)
  const order = new Map<string, string[]>()
  const seen = new Set<string>()
  const repeated: string[] = []
  for (const row of rows) {
    const id = String(row.message_id)
    if (seen.has(id)) repeated.push(id)
    seen.add(id)
    order.set(String(row.msg_key), [...(order.get(String(row.msg_key)) ?? []), id])
  }
  return { order, repeated }
}
