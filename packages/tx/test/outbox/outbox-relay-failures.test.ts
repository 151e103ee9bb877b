/**
 * The relay when publishing fails: an unroutable message (mandatory) or a missing exchange counts as a failed
 * attempt, is retried with backoff and dead-lettered after maxAttempts with its last error; a dead row holds back
 * its key's later rows (and no other key's) until requeued; a broker that cannot be reached costs no attempt.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { createOutbox, type Outbox, partitionOf, type RelayEvent, rabbitPublisher } from '../../src/outbox/index.js'
import { type BusinessDb, openBusinessDb } from './business-db.js'
import { addOne } from './outbox-helpers.js'
import { openTestBroker, RABBIT_URL, type TestBroker } from './rabbit.js'
import { eventually } from './wait.js'

const PARTITIONS = 4

describe.each(['sqlite', 'postgres', 'mysql'] as const)('outbox relay failures (%s)', (dialect) => {
  let db: BusinessDb
  let outbox: Outbox
  let broker: TestBroker
  let events: (RelayEvent & { at: number })[]
  const onEvent = (event: RelayEvent) => events.push({ ...event, at: Date.now() })

  beforeEach(async () => {
    db = openBusinessDb(dialect)
    outbox = createOutbox({ store: db.store, partitions: PARTITIONS })
    await outbox.ready()
    broker = await openTestBroker('order.*')
    await broker.consume()
    events = []
  })
  afterEach(async () => {
    await outbox.close()
    await broker.close()
    await db.drop(['outbox', 'outbox_relays'])
  })

  const row = async (id: string) =>
    (
      await db.sql(
        `SELECT status, attempts, last_error, next_attempt_at FROM ${db.prefix}outbox WHERE message_id = ?`,
        [id],
      )
    )[0]
  const delivered = (id: string) => broker.deliveries.some((d) => d.id === id)

  it('dead-letters an unroutable message after maxAttempts, holding back only its own key until requeued', async () => {
    // k3 shares k1's partition, so the pass that publishes k3 has seen k1's held-back row.
    const k3 = ['k3', 'k4', 'k5', 'k6', 'k7', 'k8', 'k9'].find(
      (k) => partitionOf(k, PARTITIONS) === partitionOf('k1', PARTITIONS),
    )
    expect(k3).toBeDefined()
    await addOne(db, outbox, { topic: 'nobody.listens', key: 'k1', id: 'k1-0', payload: 0 })
    await addOne(db, outbox, { topic: 'order.x', key: 'k1', id: 'k1-1', payload: 1 })
    await addOne(db, outbox, { topic: 'order.y', key: 'k2', id: 'k2-0', payload: 0 })
    const publisher = rabbitPublisher({ url: RABBIT_URL, exchange: broker.exchange })
    outbox.relay({ publisher, pollMs: 20, maxAttempts: 2, backoffMs: 200, onEvent })

    await eventually('k1-0 to be dead-lettered', () => events.some((e) => e.type === 'dead'))
    const failed = events.find((e) => e.type === 'failed')
    const dead = events.find((e) => e.type === 'dead')
    expect(failed).toMatchObject({ id: 'k1-0', attempts: 1 })
    expect(dead).toMatchObject({ id: 'k1-0', attempts: 2 })
    // Backoff: the second attempt waited for the retry time the failure set (100 to 200 ms later).
    const retryAt = failed?.type === 'failed' ? failed.retryAt : Number.NaN
    expect(dead?.at).toBeGreaterThanOrEqual(retryAt)
    expect(await row('k1-0')).toMatchObject({ status: 'dead', attempts: 2 })
    expect(String((await row('k1-0'))?.last_error)).toMatch(/unroutable.*nobody\.listens/)

    await addOne(db, outbox, { topic: 'order.z', key: k3 as string, id: 'k3-0', payload: 0 })
    await eventually('the other keys to flow', () => delivered('k2-0') && delivered('k3-0'))
    expect(delivered('k1-1')).toBe(false)
    expect(await row('k1-1')).toMatchObject({ status: 'pending', attempts: 0 })

    await broker.bind('nobody.listens')
    expect(await outbox.requeue('k1-0')).toBe(true)
    expect(await outbox.requeue('k1-0')).toBe(false) // no longer dead
    await eventually('k1 to flow again', () => delivered('k1-1'))
    const k1 = broker.deliveries.filter((d) => d.key === 'k1').map((d) => d.id)
    expect(k1).toEqual(['k1-0', 'k1-1'])
  })

  it('counts a missing exchange as a failed attempt and keeps going on a new channel', async () => {
    await addOne(db, outbox, { topic: 'order.x', key: 'k1', id: 'm-0', payload: 0 })
    const publisher = rabbitPublisher({ url: RABBIT_URL, exchange: `${broker.exchange}-missing` })
    outbox.relay({ publisher, pollMs: 20, maxAttempts: 2, backoffMs: 20, onEvent })
    await eventually('m-0 to be dead-lettered', () => events.some((e) => e.type === 'dead'))
    expect(await row('m-0')).toMatchObject({ status: 'dead', attempts: 2 })
    expect(String((await row('m-0'))?.last_error)).toMatch(/NOT_FOUND|no exchange/)
    expect(await outbox.discard('m-0')).toBe(true)
    expect(await row('m-0')).toMatchObject({ status: 'discarded' })
  })

  it('costs no attempt while the broker cannot be reached, and backs off', async () => {
    await addOne(db, outbox, { topic: 'order.x', key: 'k1', id: 'm-0', payload: 0 })
    const publisher = rabbitPublisher({ url: 'amqp://guest:guest@127.0.0.1:1', exchange: broker.exchange })
    outbox.relay({ publisher, pollMs: 20, maxAttempts: 1, backoffMs: 20, onEvent })
    await eventually('three failed passes', () => events.filter((e) => e.type === 'error').length >= 3)
    const errors = events.filter((e) => e.type === 'error')
    expect(errors[0]).toMatchObject({ error: { code: 'PUBLISHER_UNAVAILABLE' } })
    expect(String(errors[0]?.type === 'error' && errors[0].error.message)).not.toContain('guest:guest')
    expect(await row('m-0')).toMatchObject({ status: 'pending', attempts: 0 })
  })
})
