/** Small shared steps of the outbox tests. */
import { expect } from 'vitest'
import type { Outbox } from '../../src/outbox/index.js'
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
