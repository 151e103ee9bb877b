/**
 * A requeue landing while the relay reads a partition must not let a key's later row overtake its requeued dead
 * row. The relay once read the pending rows and then, in a second statement, the dead rows holding their keys back:
 * a requeue between the two found the later row pending and no dead row, so the later row went out first (k1-1
 * before k1-0, seen once in a CI run of the dead-letter test). Here the requeue is placed exactly there, every time:
 * the relay runs on the real database through a query function that runs the requeue as soon as the partition's
 * pending-rows read has returned, before the relay's next statement. A recording publisher stands in for the broker
 * (the order the relay publishes in is what is checked).
 */
import { afterEach, describe, expect, it } from 'vitest'
import { createOutbox, type Outbox, partitionOf } from '../../src/outbox/index.js'
import { OutboxRelay } from '../../src/outbox/relay.js'
import { openStoreDb, type StoreDb } from '../../src/outbox/store-db.js'
import type { OutboxPublisher } from '../../src/outbox/types.js'
import { type BusinessDb, openBusinessDb } from './business-db.js'
import { addOne } from './outbox-helpers.js'
import { eventually } from './wait.js'

const PARTITIONS = 4

/** A publisher that confirms every message and records the ids in the order they were published. */
function recordingPublisher(): OutboxPublisher & { readonly ids: string[] } {
  const ids: string[] = []
  return {
    ids,
    publish: async (messages) => {
      ids.push(...messages.map((m) => m.id))
      return messages.map(() => 'ok' as const)
    },
    close: async () => undefined,
  }
}

/**
 * `store` with a query function that calls `between()` once, right after the first read of pending rows of
 * `partition` has returned and before the relay sees its rows (so before any statement the relay sends after it).
 */
function withHookAfterPendingRead(store: StoreDb, partition: number, between: () => Promise<void>): StoreDb {
  let done = false
  return {
    dialect: store.dialect,
    prefix: store.prefix,
    shownUrl: store.shownUrl,
    async query(sql, params) {
      const result = await store.query(sql, params)
      const pendingRead = /^\s*SELECT\b/i.test(sql) && sql.includes("status = 'pending'")
      if (!done && pendingRead && params?.[0] === partition) {
        done = true
        await between()
      }
      return result
    },
    ensure: (statements) => store.ensure(statements),
    lockBackend: () => store.lockBackend(),
    close: () => store.close(),
  }
}

describe.each(['postgres', 'mysql', 'sqlite'] as const)('outbox relay, requeue during a read (%s)', (dialect) => {
  let db: BusinessDb | undefined
  let outbox: Outbox | undefined
  let relay: OutboxRelay | undefined
  let store: StoreDb | undefined

  afterEach(async () => {
    await relay?.close()
    await store?.close()
    await outbox?.close()
    await db?.drop(['outbox', 'outbox_relays'])
  })

  it("a requeue between the relay's reads still sends the requeued row before its key's later row", async () => {
    db = openBusinessDb(dialect)
    outbox = createOutbox({ store: db.store, partitions: PARTITIONS })
    await outbox.ready()
    await addOne(db, outbox, { topic: 'order.x', key: 'k1', id: 'k1-0', payload: 0 })
    await addOne(db, outbox, { topic: 'order.x', key: 'k1', id: 'k1-1', payload: 1 })
    // k1-0 dead-lettered (as after maxAttempts failures): it holds k1-1 back until requeued.
    await db.sql(`UPDATE ${db.prefix}outbox SET status = 'dead', attempts = 2 WHERE message_id = ?`, ['k1-0'])

    let requeued: boolean | undefined
    store = withHookAfterPendingRead(
      openStoreDb({ store: db.store }, 'test'),
      partitionOf('k1', PARTITIONS),
      async () => {
        requeued = await (outbox as Outbox).requeue('k1-0')
      },
    )
    const publisher = recordingPublisher()
    relay = new OutboxRelay(store, PARTITIONS, { publisher, pollMs: 20 }, () => undefined)

    await eventually('both rows of k1 to be published', () => publisher.ids.length >= 2)
    // The hook ran where it should: the requeue found k1-0 dead, during the relay's read of k1's partition.
    expect(requeued).toBe(true)
    expect(publisher.ids).toEqual(['k1-0', 'k1-1'])
  })
})
