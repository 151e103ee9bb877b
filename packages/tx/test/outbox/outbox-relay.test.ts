/**
 * The relay against the real RabbitMQ: committed rows go out with publisher confirms (AMQP messageId = outbox id,
 * routing key = topic), in insert order per key, marked sent only after the confirm; rolled-back rows never go
 * out. Runs on PostgreSQL, MariaDB and SQLite.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { createOutbox, type Outbox, type OutboxPublisher, rabbitPublisher } from '../../src/outbox/index.js'
import { DIALECTS } from '../support/databases.js'
import { type BusinessDb, openBusinessDb } from './business-db.js'
import { addOne, firstDeliveryOrder } from './outbox-helpers.js'
import { openTestBroker, RABBIT_URL, type TestBroker } from './rabbit.js'
import { eventually, latch } from './wait.js'

describe.each(DIALECTS)('outbox relay to RabbitMQ (%s)', (dialect) => {
  let db: BusinessDb
  let outbox: Outbox
  let broker: TestBroker

  beforeEach(async () => {
    db = openBusinessDb(dialect)
    outbox = createOutbox({ store: db.store, partitions: 4 })
    await outbox.ready()
    broker = await openTestBroker()
  })
  afterEach(async () => {
    await outbox.close()
    await broker.close()
    await db.drop(['outbox', 'outbox_relays'])
  })

  it('publishes every committed row once, in insert order per key, and marks it sent after the confirm', async () => {
    const keys = ['a', 'b', 'c', 'd', 'e']
    const expected = new Map(keys.map((key) => [key, [] as string[]]))
    for (let i = 0; i < 30; i++) {
      const key = keys[i % keys.length] as string
      const id = `${key}-${i}`
      const rollback = i % 7 === 3
      await addOne(db, outbox, { topic: `order.${key}`, key, id, payload: { i } }, rollback)
      if (!rollback) expected.get(key)?.push(id)
    }
    await broker.consume()
    const relay = outbox.relay({
      publisher: rabbitPublisher({ url: RABBIT_URL, exchange: broker.exchange }),
      pollMs: 20,
      batchSize: 7,
    })
    const total = [...expected.values()].flat().length
    await eventually('every committed message to arrive', () => broker.deliveries.length >= total)
    await eventually('every row to be marked sent', async () => {
      const rows = await db.sql(`SELECT status FROM ${db.prefix}outbox WHERE status <> 'sent'`)
      return rows.length === 0
    })
    await relay.close()
    expect(broker.deliveries).toHaveLength(total) // no duplicates without faults
    expect(firstDeliveryOrder(broker.deliveries)).toEqual(expected)
    const delivery = broker.deliveries.find((d) => d.id === 'a-0')
    expect(delivery).toMatchObject({ key: 'a', topic: 'order.a', payload: { i: 0 } })
    expect(relay.heldPartitions).toEqual([])
  })

  it('runs several relays with one active per partition, and hands partitions over when one stops', async () => {
    await broker.consume()
    const published = new Map<number, Set<string>>() // partition -> relays that published it
    const start = (name: string) =>
      outbox.relay({
        publisher: rabbitPublisher({ url: RABBIT_URL, exchange: broker.exchange }),
        pollMs: 20,
        onEvent: (event) => {
          if (event.type !== 'published') return
          published.set(event.partition, (published.get(event.partition) ?? new Set()).add(name))
        },
      })
    const relays = { a: start('a'), b: start('b') }
    const all = [0, 1, 2, 3]
    // The two relays split the partitions, 2 each (one may take all first, then give two back).
    await eventually('every partition to be held, 2 by each relay', () => {
      const held = [...relays.a.heldPartitions, ...relays.b.heldPartitions].sort()
      return JSON.stringify(held) === JSON.stringify(all) && relays.a.heldPartitions.length === 2
    })
    const expected = new Map<string, string[]>()
    const addMany = async (from: number, count: number) => {
      for (let i = from; i < from + count; i++) {
        const key = `key-${i % 6}`
        await addOne(db, outbox, { topic: 'order.x', key, id: `${key}-${i}`, payload: i })
        expected.set(key, [...(expected.get(key) ?? []), `${key}-${i}`])
      }
      await eventually('the messages to arrive', () => broker.deliveries.length >= from + count)
    }
    await addMany(0, 24)
    for (const [partition, names] of published) {
      expect(names.size, `partition ${partition} published by ${[...names]}`).toBe(1)
      const holder = relays.a.heldPartitions.includes(partition) ? 'a' : 'b'
      expect([...names]).toEqual([holder])
    }
    // One relay stops (releasing its partitions and leaving); the other one takes every partition over.
    const [stopping, staying] = [relays.a, relays.b]
    await stopping.close()
    await eventually('the other relay to hold every partition', () => staying.heldPartitions.length === all.length)
    await addMany(24, 12)
    expect(broker.deliveries).toHaveLength(36)
    expect(firstDeliveryOrder(broker.deliveries)).toEqual(expected)
  })

  it('marks a row sent only after the broker confirmed it', async () => {
    await broker.consume()
    await addOne(db, outbox, { topic: 'order.x', key: 'k', id: 'm-1', payload: 1 })
    // The real publisher, with a gate between its confirm and the relay's mark.
    const inner = rabbitPublisher({ url: RABBIT_URL, exchange: broker.exchange })
    const confirmed = latch()
    const release = latch()
    const status = async () => (await db.sql(`SELECT status FROM ${db.prefix}outbox WHERE message_id = 'm-1'`))[0]
    const gated: OutboxPublisher = {
      async publish(messages) {
        const outcomes = await inner.publish(messages)
        confirmed.open()
        await release.wait()
        return outcomes
      },
      close: () => inner.close(),
    }
    const relay = outbox.relay({ publisher: gated, pollMs: 20 })
    try {
      await confirmed.wait()
      await eventually('the confirmed message to be delivered', () => broker.deliveries.length === 1)
      expect(await status()).toEqual({ status: 'pending' })
    } finally {
      release.open() // also on failure, so that closing the relay does not wait on the gate forever
    }
    await eventually('the row to be marked sent', async () => (await status())?.status === 'sent')
    await relay.close()
  })
})
