/**
 * RabbitMQ really restarted mid-run: a private node (its own port and data, see private-rabbit.ts; the shared
 * broker is never touched) is stopped while the relay is publishing, rows keep being committed while it is down,
 * and it is started again. The relay backs off, reconnects and finishes; the durable queue then holds every
 * message at least once (confirmed ones survived the restart on disk, unconfirmed ones were published again),
 * and a consumer through the inbox gives each one effect, in insert order per key. PostgreSQL holds the outbox.
 */
import { randomBytes } from 'node:crypto'
import amqp, { type Channel, type ChannelModel } from 'amqplib'
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest'
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
import { PRIVATE_RABBIT_URL, startPrivateRabbit, stopPrivateRabbit } from './private-rabbit.js'
import { eventually } from './wait.js'

const KEYS = ['k1', 'k2', 'k3', 'k4', 'k5']

/** A connection to the private node with a durable exchange and queue of this test. */
async function openDurable(exchange: string, queue: string): Promise<{ conn: ChannelModel; ch: Channel }> {
  const conn = await amqp.connect(PRIVATE_RABBIT_URL)
  conn.on('error', () => undefined)
  const ch = await conn.createChannel()
  ch.on('error', () => undefined)
  await ch.assertExchange(exchange, 'topic', { durable: true })
  await ch.assertQueue(queue, { durable: true })
  await ch.bindQueue(queue, exchange, '#')
  return { conn, ch }
}

describe('outbox relay across a RabbitMQ restart (private node, postgres)', () => {
  let db: BusinessDb
  let outbox: Outbox
  let inbox: Inbox
  const tag = randomBytes(4).toString('hex')
  const exchange = `latchkey-tx-restart-${tag}`
  const queue = `latchkey-tx-restart-${tag}`

  beforeAll(async () => {
    await startPrivateRabbit()
  }, 300_000)
  afterAll(async () => {
    await stopPrivateRabbit()
  }, 120_000)
  beforeEach(async () => {
    db = openBusinessDb('postgres')
    outbox = createOutbox({ store: db.store, partitions: 2 })
    inbox = createInbox({ store: db.store })
    await Promise.all([outbox.ready(), inbox.ready()])
    await db.sql(`CREATE TABLE ${db.prefix}effects (n SERIAL PRIMARY KEY, message_id VARCHAR(64), msg_key VARCHAR(64))`)
  })
  afterEach(async () => {
    await outbox.close()
    await inbox.close()
    await db.drop(['effects', 'outbox', 'outbox_relays', 'inbox'])
  })

  it('backs off while the broker is down, then delivers everything: once in effect, in key order', async () => {
    const setup = await openDurable(exchange, queue)
    await setup.conn.close()
    const events: RelayEvent[] = []
    const relay = outbox.relay({
      publisher: rabbitPublisher({ url: PRIVATE_RABBIT_URL, exchange, confirmTimeoutMs: 30_000 }),
      pollMs: 10,
      batchSize: 5,
      backoffMs: 50,
      maxBackoffMs: 500,
      onEvent: (event) => events.push(event),
    })
    const expected = new Map(KEYS.map((key) => [key, [] as string[]]))
    let i = 0
    const addSome = async (n: number) => {
      for (let j = 0; j < n; j++) {
        const key = KEYS[i % KEYS.length] as string
        const id = `${key}-${i++}`
        await addOne(db, outbox, { topic: `order.${key}`, key, id, payload: { i } })
        expected.get(key)?.push(id)
      }
    }
    const unsent = async () => (await db.sql(`SELECT 1 FROM ${db.prefix}outbox WHERE status <> 'sent'`)).length
    let consumer: { conn: ChannelModel; ch: Channel } | undefined
    try {
      await addSome(20)
      await eventually('the first messages to be confirmed', async () => (await unsent()) === 0, 30_000)
      // The restart: the node stops while the relay is publishing the next rows, which keep coming meanwhile.
      const before = events.length
      const adding = addSome(30)
      await eventually('the relay to be publishing again', () =>
        events.slice(before).some((e) => e.type === 'published'),
      )
      await stopPrivateRabbit()
      await adding
      await addSome(10)
      await eventually('the relay to see the broker gone', () =>
        events.some((e) => e.type === 'error' && (e.error as { code?: string }).code === 'PUBLISHER_UNAVAILABLE'),
      )
      expect(await unsent()).toBeGreaterThan(0) // nothing can be confirmed while the broker is down
      await startPrivateRabbit()
      await eventually('every row to be marked sent after the restart', async () => (await unsent()) === 0, 60_000)
      const total = i

      // The durable queue kept what was confirmed before the restart; consume it all through the inbox.
      consumer = await openDurable(exchange, queue)
      await consumer.ch.prefetch(1)
      const apply = inboxEffect(db, inbox)
      const delivered: string[] = []
      const ch = consumer.ch
      await ch.consume(queue, (message) => {
        if (message === null) return
        const id = String(message.properties.messageId)
        const key = String(message.properties.headers?.['x-message-key'])
        apply({ id, key }).then(
          () => {
            delivered.push(id)
            ch.ack(message)
          },
          () => ch.nack(message, false, true),
        )
      })
      await eventually('every message to take effect', async () => {
        const { order } = await effects(db)
        return [...order.values()].flat().length === total
      })
      const { order, repeated } = await effects(db)
      expect(repeated).toEqual([])
      expect(order).toEqual(expected)
      expect(new Set(delivered).size).toBe(total)
      // A broker outage costs no message an attempt.
      expect(await db.sql(`SELECT 1 FROM ${db.prefix}outbox WHERE attempts > 0`)).toEqual([])
    } finally {
      await relay.close()
      if (consumer !== undefined) {
        await consumer.ch.deleteQueue(queue).catch(() => undefined)
        await consumer.ch.deleteExchange(exchange).catch(() => undefined)
        await consumer.conn.close().catch(() => undefined)
      }
    }
  }, 240_000)
})
