/**
 * The relay against the real RabbitMQ: committed rows go out with publisher confirms (AMQP messageId = outbox id,
 * routing key = topic), in insert order per key, marked sent only after the confirm; rolled-back rows never go
 * out. Runs on PostgreSQL, MariaDB and SQLite.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { createOutbox, type Outbox, rabbitPublisher } from '../../src/outbox/index.js'
import { DIALECTS } from '../support/databases.js'
import { type BusinessDb, openBusinessDb } from './business-db.js'
import { addOne, firstDeliveryOrder } from './outbox-helpers.js'
import { openTestBroker, RABBIT_URL, type TestBroker } from './rabbit.js'
import { eventually } from './wait.js'

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
    await db.drop(['outbox'])
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
})
