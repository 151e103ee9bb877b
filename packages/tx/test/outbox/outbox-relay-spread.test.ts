/**
 * Relay processes share one outbox's partitions instead of one taking them all: each ends up holding
 * `ceil(partitions / live relays)`; two relays hold three each, and when a third joins they give one each back
 * to it. A kill -9 of one of them frees its partitions (its leases expire and its
 * heartbeat goes stale), and the two survivors take them over. Meanwhile messages keep coming: every message is
 * delivered at least once, takes effect exactly once through the inbox, and each key's effects keep insert
 * order. PostgreSQL holds the business rows, the outbox, the inbox, the heartbeats and the partition leases.
 */
import { type ChildProcess, spawn } from 'node:child_process'
import { once } from 'node:events'
import { createInterface } from 'node:readline'
import { fileURLToPath } from 'node:url'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { createInbox, createOutbox, type Inbox, type Outbox } from '../../src/outbox/index.js'
import { type BusinessDb, openBusinessDb } from './business-db.js'
import { addOne, effects, inboxEffect } from './outbox-helpers.js'
import { openTestBroker, type TestBroker } from './rabbit.js'
import { eventually } from './wait.js'

const CHILD = fileURLToPath(new URL('./relay-child.ts', import.meta.url))
const PARTITIONS = 6
const KEYS = ['k1', 'k2', 'k3', 'k4', 'k5', 'k6', 'k7', 'k8']

/** A relay process and what its events say it holds and has published. */
interface RelayProcess {
  readonly child: ChildProcess
  readonly held: Set<number>
  readonly published: Set<string>
  /** Partitions given back on purpose (to a relay that joined). */
  released: number
}

function startRelay(store: string, exchange: string): RelayProcess {
  const child = spawn(process.execPath, ['--import', 'tsx', CHILD], {
    env: { ...process.env, STORE: store, EXCHANGE: exchange, PARTITIONS: String(PARTITIONS), LEASE_TTL_MS: '1000' },
    stdio: ['ignore', 'pipe', 'inherit'],
  })
  const relay: RelayProcess = { child, held: new Set(), published: new Set(), released: 0 }
  createInterface({ input: child.stdout as NodeJS.ReadableStream }).on('line', (line) => {
    const event = JSON.parse(line) as { type: string; partition?: number; ids?: string[] }
    if (event.type === 'partition-acquired') relay.held.add(event.partition as number)
    if (event.type === 'partition-lost' || event.type === 'partition-released') {
      relay.held.delete(event.partition as number)
    }
    if (event.type === 'partition-released') relay.released++
    if (event.type === 'published') for (const id of event.ids ?? []) relay.published.add(id)
  })
  return relay
}

const alive = (r: RelayProcess) => r.child.exitCode === null && r.child.signalCode === null

describe('outbox relays spread the partitions (postgres, 3 processes)', () => {
  let db: BusinessDb
  let outbox: Outbox
  let inbox: Inbox
  let broker: TestBroker
  let relays: RelayProcess[] = []

  beforeEach(async () => {
    db = openBusinessDb('postgres')
    outbox = createOutbox({ store: db.store, partitions: PARTITIONS })
    inbox = createInbox({ store: db.store })
    await Promise.all([outbox.ready(), inbox.ready()])
    await db.sql(`CREATE TABLE ${db.prefix}effects (n SERIAL PRIMARY KEY, message_id VARCHAR(64), msg_key VARCHAR(64))`)
    broker = await openTestBroker()
  })
  afterEach(async () => {
    for (const r of relays.filter(alive)) {
      const exited = once(r.child, 'exit')
      r.child.kill('SIGTERM')
      await exited
    }
    relays = []
    await outbox.close()
    await inbox.close()
    await broker.close()
    await db.drop(['effects', 'outbox', 'outbox_relays', 'inbox'])
  })

  it('each relay holds a share, a joining relay is given some, a killed relay’s are taken over; delivered, once in effect, in key order', async () => {
    await broker.consume(inboxEffect(db, inbox))
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
    // Two relays first: ceil(6 / 2) = 3 each.
    relays = [0, 1].map(() => startRelay(db.store, broker.exchange))
    await eventually(
      'each of the 2 relays to hold 3 partitions',
      () => relays.every((r) => r.held.size === 3) && new Set(relays.flatMap((r) => [...r.held])).size === PARTITIONS,
      30_000,
    )
    await addSome(16)
    // A third joins: the first two give one partition each back, ceil(6 / 3) = 2 each, every partition held by
    // exactly one relay.
    relays.push(startRelay(db.store, broker.exchange))
    const [victim, ...survivors] = relays as [RelayProcess, RelayProcess, RelayProcess]
    await eventually(
      'each of the 3 relays to hold 2 partitions, all 6 held',
      () => relays.every((r) => r.held.size === 2) && new Set(relays.flatMap((r) => [...r.held])).size === PARTITIONS,
      30_000,
    )
    expect(relays[0]?.released).toBeGreaterThan(0)
    expect(relays[1]?.released).toBeGreaterThan(0)
    await addSome(32)
    await eventually('the first messages to be published', async () => {
      const rows = await db.sql(`SELECT 1 FROM ${db.prefix}outbox WHERE status <> 'sent'`)
      return rows.length === 0
    })
    // More than one relay did the publishing.
    expect(relays.filter((r) => r.published.size > 0).length).toBeGreaterThan(1)

    const orphaned = [...victim.held]
    const killed = once(victim.child, 'exit')
    victim.child.kill('SIGKILL')
    await killed
    await addSome(48)

    // Takeover: the survivors hold all 6 between them, 3 each, the victim's included.
    await eventually(
      'the survivors to hold every partition, 3 each',
      () =>
        survivors.every((r) => r.held.size === 3) && new Set(survivors.flatMap((r) => [...r.held])).size === PARTITIONS,
      30_000,
    )
    expect(orphaned.every((p) => survivors.some((r) => r.held.has(p)))).toBe(true)
    await addSome(16)

    const total = i
    await eventually(
      'every row to be marked sent',
      async () => (await db.sql(`SELECT 1 FROM ${db.prefix}outbox WHERE status <> 'sent'`)).length === 0,
      30_000,
    )
    await eventually('every message to take effect', async () => {
      const { order } = await effects(db)
      return [...order.values()].flat().length === total
    })
    const { order, repeated } = await effects(db)
    expect(repeated).toEqual([])
    expect(order).toEqual(expected)
    expect(new Set(broker.deliveries.map((d) => d.id)).size).toBe(total)
    // Messages added after the kill were published by the survivors only.
    const late = [...expected.values()].flat().filter((id) => Number(id.split('-')[1]) >= 48)
    expect(late).toHaveLength(64)
    expect(late.every((id) => survivors.some((r) => r.published.has(id)))).toBe(true)
  }, 120_000)
})
