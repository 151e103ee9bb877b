/**
 * kill -9 of a relay process at its crash points, then a new relay finishing the job: every message is
 * delivered at least once, its effect happens exactly once through the inbox, and each key's effects keep
 * insert order. PostgreSQL holds the business rows, the outbox, the inbox and the partition leases.
 *  - after-publish: the wave was handed to the broker, no confirm seen yet;
 *  - after-confirm: the broker confirmed the wave, the rows are not marked sent yet (so it is sent twice).
 */
import { type ChildProcess, spawn } from 'node:child_process'
import { once } from 'node:events'
import { fileURLToPath } from 'node:url'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { createInbox, createOutbox, type Inbox, type Outbox, rabbitPublisher } from '../../src/outbox/index.js'
import { type BusinessDb, openBusinessDb } from './business-db.js'
import { addOne, effects, inboxEffect } from './outbox-helpers.js'
import { openTestBroker, RABBIT_URL, type TestBroker } from './rabbit.js'
import { eventually } from './wait.js'

const CHILD = fileURLToPath(new URL('./relay-child.ts', import.meta.url))
const PARTITIONS = 2
const KEYS = ['k1', 'k2', 'k3', 'k4']
const PER_KEY = 8

describe('outbox relay killed with SIGKILL (postgres)', () => {
  let db: BusinessDb
  let outbox: Outbox
  let inbox: Inbox
  let broker: TestBroker
  let child: ChildProcess | undefined

  beforeEach(async () => {
    db = openBusinessDb('postgres')
    outbox = createOutbox({ store: db.store, partitions: PARTITIONS })
    inbox = createInbox({ store: db.store })
    await Promise.all([outbox.ready(), inbox.ready()])
    await db.sql(`CREATE TABLE ${db.prefix}effects (n SERIAL PRIMARY KEY, message_id VARCHAR(64), msg_key VARCHAR(64))`)
    broker = await openTestBroker()
  })
  afterEach(async () => {
    if (child !== undefined && child.exitCode === null && child.signalCode === null) child.kill('SIGKILL')
    await outbox.close()
    await inbox.close()
    await broker.close()
    await db.drop(['effects', 'outbox', 'outbox_relays', 'inbox'])
  })

  it.each(['after-publish', 'after-confirm'])(
    'at %s, a new relay finishes: delivered, effect once, key order kept',
    async (point) => {
      const expected = new Map(KEYS.map((key) => [key, [] as string[]]))
      for (let i = 0; i < PER_KEY; i++) {
        for (const key of KEYS) {
          const id = `${key}-${i}`
          await addOne(db, outbox, { topic: `order.${key}`, key, id, payload: { i } })
          expected.get(key)?.push(id)
        }
      }
      await broker.consume(inboxEffect(db, inbox))

      // The two partitions drain concurrently, and a wave's mark lands while the partition's next wave is
      // published (settled before the one after): by the fifth wave one partition has reached its third, so its
      // first wave is marked sent when the process dies.
      child = spawn(process.execPath, ['--import', 'tsx', CHILD], {
        env: {
          ...process.env,
          STORE: db.store,
          EXCHANGE: broker.exchange,
          PARTITIONS: String(PARTITIONS),
          LEASE_TTL_MS: '1000',
          LATCHKEY_TX_CRASH_AT: `${point}:5`,
        },
        stdio: ['ignore', 'pipe', 'inherit'],
      })
      const [code, signal] = await once(child, 'exit')
      expect({ code, signal }).toEqual({ code: null, signal: 'SIGKILL' })
      const pending = await db.sql(`SELECT message_id FROM ${db.prefix}outbox WHERE status = 'pending'`)
      expect(pending.length).toBeGreaterThan(0)
      expect(pending.length).toBeLessThan(KEYS.length * PER_KEY)

      // The dead relay's leases run out after their TTL; then the new one takes the partitions over.
      const relay = outbox.relay({
        publisher: rabbitPublisher({ url: RABBIT_URL, exchange: broker.exchange }),
        pollMs: 20,
      })
      await eventually('every row to be marked sent', async () => {
        const rows = await db.sql(`SELECT message_id FROM ${db.prefix}outbox WHERE status <> 'sent'`)
        return rows.length === 0
      })
      const total = KEYS.length * PER_KEY
      await eventually(
        'every message to take effect',
        async () =>
          (await effects(db)).order.size === KEYS.length &&
          [...(await effects(db)).order.values()].flat().length === total,
      )
      await relay.close()
      const { order, repeated } = await effects(db)
      expect(repeated).toEqual([])
      expect(order).toEqual(expected)
      const ids = new Set(broker.deliveries.map((d) => d.id))
      expect(ids.size).toBe(total)
      if (point === 'after-confirm') {
        // The confirmed but unmarked wave went out twice; the inbox kept its effect single.
        expect(broker.deliveries.length).toBeGreaterThan(total)
      }
    },
  )
})
