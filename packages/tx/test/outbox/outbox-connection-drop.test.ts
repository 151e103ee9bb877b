/**
 * RabbitMQ closes the relay's connection from the server side in the middle of a run (`rabbitmqctl
 * close_connection` on this test's named connection only; the shared broker keeps running): the relay
 * reconnects, every message is delivered at least once, takes effect exactly once through the inbox, and each
 * key's effects keep insert order. The lost connection costs no message an attempt. A TCP proxy holds the
 * broker's confirms back just before the drop, so a wave is known to be in flight (at the broker, unconfirmed).
 */
import { randomBytes } from 'node:crypto'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import {
  createInbox,
  createOutbox,
  type Inbox,
  type Outbox,
  type RelayEvent,
  rabbitPublisher,
} from '../../src/outbox/index.js'
import { type BusinessDb, openBusinessDb } from './business-db.js'
import { addOne, effects, inboxEffect } from './outbox-helpers.js'
import { closeConnectionsNamed, connectionsNamed, openTestBroker, RABBIT_URL, type TestBroker } from './rabbit.js'
import { openHoldProxy } from './tcp-hold-proxy.js'
import { eventually } from './wait.js'

const KEYS = ['k1', 'k2', 'k3', 'k4', 'k5']

describe('outbox relay when RabbitMQ drops its connection (postgres)', () => {
  let db: BusinessDb
  let outbox: Outbox
  let inbox: Inbox
  let broker: TestBroker

  beforeEach(async () => {
    db = openBusinessDb('postgres')
    outbox = createOutbox({ store: db.store, partitions: 2 })
    inbox = createInbox({ store: db.store })
    await Promise.all([outbox.ready(), inbox.ready()])
    await db.sql(`CREATE TABLE ${db.prefix}effects (n SERIAL PRIMARY KEY, message_id VARCHAR(64), msg_key VARCHAR(64))`)
    broker = await openTestBroker()
  })
  afterEach(async () => {
    await outbox.close()
    await inbox.close()
    await broker.close()
    await db.drop(['effects', 'outbox', 'outbox_relays', 'inbox'])
  })

  it('reconnects and delivers everything, once in effect, in key order', async () => {
    const name = `latchkey-tx-drop-${randomBytes(4).toString('hex')}`
    const rabbit = new URL(RABBIT_URL)
    const proxy = await openHoldProxy({ host: rabbit.hostname, port: Number(rabbit.port || 5672) })
    rabbit.port = String(proxy.port)
    const events: RelayEvent[] = []
    await broker.consume(inboxEffect(db, inbox))
    const relay = outbox.relay({
      // No confirm timeout while the confirms are held on purpose (rabbitmqctl can take seconds on a busy host).
      publisher: rabbitPublisher({
        url: rabbit.toString(),
        exchange: broker.exchange,
        connectionName: name,
        confirmTimeoutMs: 60_000,
      }),
      pollMs: 10,
      batchSize: 5,
      backoffMs: 20,
      onEvent: (event) => events.push(event),
    })
    const expected = new Map(KEYS.map((key) => [key, [] as string[]]))
    let i = 0
    const addNext = async () => {
      const key = KEYS[i % KEYS.length] as string
      const id = `${key}-${i++}`
      await addOne(db, outbox, { topic: `order.${key}`, key, id, payload: { i } })
      expected.get(key)?.push(id)
    }
    try {
      for (let n = 0; n < 10; n++) await addNext()
      await eventually('a first confirmed wave', () => events.some((e) => e.type === 'published'))
      // Hold the broker's confirms and keep writing until a wave has reached the broker and its confirm is held.
      proxy.hold()
      await eventually('a wave in flight, its confirm held back', async () => {
        await addNext()
        return proxy.sentSinceHold > 0 && proxy.heldBytes > 0
      })
      const closed = await closeConnectionsNamed(name)
      expect(closed).toHaveLength(1)
      proxy.cutHeld() // the broker's close frame is among the held bytes: the client learns of it as a dead socket
      await eventually('the in-flight wave to fail as PUBLISHER_UNAVAILABLE', () =>
        events.some((e) => e.type === 'error' && (e.error as { code?: string }).code === 'PUBLISHER_UNAVAILABLE'),
      )
      for (let n = 0; n < 20; n++) await addNext()

      const total = i
      await eventually('every row to be marked sent', async () => {
        const rows = await db.sql(`SELECT message_id FROM ${db.prefix}outbox WHERE status <> 'sent'`)
        return rows.length === 0
      })
      await eventually('every message to take effect', async () => {
        const { order } = await effects(db)
        return [...order.values()].flat().length === total
      })
      // Published again over a new connection of the same name.
      const now = await connectionsNamed(name)
      expect(now).toHaveLength(1)
      expect(now).not.toEqual(closed)
      await relay.close()
      const { order, repeated } = await effects(db)
      expect(repeated).toEqual([])
      expect(order).toEqual(expected)
      expect(new Set(broker.deliveries.map((d) => d.id)).size).toBe(total)
      // The held wave had reached the broker: it was delivered again after the reconnect, and took effect once.
      expect(broker.deliveries.length).toBeGreaterThan(total)
      // A lost connection is no fault of the messages: none was charged an attempt.
      const codes = events.filter((e) => e.type === 'error').map((e) => (e.error as { code?: string }).code)
      expect(codes.filter((code) => code !== 'PUBLISHER_UNAVAILABLE')).toEqual([])
      expect(await db.sql(`SELECT message_id FROM ${db.prefix}outbox WHERE attempts > 0`)).toEqual([])
    } catch (e) {
      console.log(
        'DIAG',
        JSON.stringify(
          events
            .filter((x) => x.type !== 'published')
            .map((x) => ({ ...x, msg: (x as { error?: Error }).error?.message })),
        ),
      )
      throw e
    } finally {
      await relay.close()
      await proxy.close()
    }
  })
})
