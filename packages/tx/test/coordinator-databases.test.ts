/**
 * The coordinator on each of the three databases, with its default recovery leases (latchkey's lock backend on
 * the store's own database): a saga that succeeds, one that compensates, a TCC, and a takeover by a second
 * coordinator after the first one stopped mid-transaction.
 */
import { randomBytes } from 'node:crypto'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { type Coordinator, createCoordinator, type TxStore } from '../src/index.js'
import { FAST_RETRY } from './support/coordinators.js'
import { DIALECTS, MYSQL_URL, openTestDatabase, POSTGRES_URL, type TestDatabase } from './support/databases.js'
import { eventually, latch } from './support/eventually.js'

describe.each(DIALECTS)('coordinator on %s with default leases', (dialect) => {
  const run = `t${randomBytes(4).toString('hex')}`
  let db: TestDatabase
  const stores: TxStore[] = []
  const coordinators: Coordinator[] = []
  const coordinator = (options: { recover?: boolean } = {}) => {
    const store = db.store()
    stores.push(store)
    const tc = createCoordinator({ store, retry: FAST_RETRY, recover: options.recover ?? false, recoverEveryMs: 50 })
    coordinators.push(tc)
    return tc
  }

  beforeAll(() => {
    db = openTestDatabase(dialect)
  })
  afterAll(async () => {
    for (const tc of coordinators) await tc.close()
    for (const s of stores) await s.close()
    await db?.dropLocks(`latchkey-tx:tx:${run}`)
    await db?.drop()
  })

  it('runs a saga to success and another through compensation', async () => {
    const tc = coordinator()
    const calls: string[] = []
    const step = (id: string, fail = false) => ({
      action: () => {
        calls.push(`${id}:action`)
        if (fail) throw new Error(`${id} failed`)
        return id
      },
      compensate: () => void calls.push(`${id}:compensate`),
    })
    const ok = await tc
      .saga('ok')
      .step('a', step('a'))
      .step('b', step('b'))
      .run({}, { gid: `${run}-ok` })
    expect(ok).toMatchObject({ status: 'succeeded', results: { a: 'a', b: 'b' } })
    const bad = await tc
      .saga('bad')
      .step('a', step('a'))
      .step('b', step('b', true))
      .run({}, { gid: `${run}-bad` })
    expect(bad.status).toBe('failed')
    expect(calls).toEqual(['a:action', 'b:action', 'a:action', 'b:action', 'b:compensate', 'a:compensate'])
    expect((await tc.get(`${run}-bad`))?.history.at(-1)?.type).toBe('failed')
  })

  it('runs a TCC', async () => {
    const tc = coordinator()
    const calls: string[] = []
    const p = (id: string) => ({
      try: () => void calls.push(`${id}:try`),
      confirm: () => void calls.push(`${id}:confirm`),
      cancel: () => void calls.push(`${id}:cancel`),
    })
    const r = await tc.tcc('pay', { x: p('x'), y: p('y') }).run({}, { gid: `${run}-tcc` })
    expect(r.status).toBe('succeeded')
    expect(calls).toEqual(['x:try', 'y:try', 'x:confirm', 'y:confirm'])
  })

  it('a second coordinator takes over a transaction the first one stopped driving', async () => {
    const counts = { a: 0, b: 0 }
    const inB = latch()
    const define = (tc: Coordinator, stall: boolean) =>
      tc
        .saga('takeover')
        .step('a', { action: () => ++counts.a })
        .step('b', {
          action: (ctx) => {
            counts.b++
            if (!stall) return 'b'
            inB.open()
            // Gives up when its coordinator closes, as a branch honouring ctx.signal does.
            return new Promise((_, reject) => ctx.signal.addEventListener('abort', () => reject(ctx.signal.reason)))
          },
        })
    const first = coordinator()
    const gid = `${run}-takeover`
    await define(first, true).run({}, { gid, wait: false })
    await inB.promise
    await first.close()
    const second = coordinator({ recover: true })
    define(second, false)
    const done = await eventually(async () => {
      const tx = await second.get(gid)
      return tx?.status === 'succeeded' && tx
    })
    expect(counts).toEqual({ a: 1, b: 2 })
    const recovered = done.history.find((e) => e.type === 'recovered')
    expect(recovered?.token).toBeGreaterThan(done.history[0]?.token ?? 0n)
  })
})

describe.each(['postgres', 'mysql'] as const)('coordinator from a %s URL', (dialect) => {
  it('opens its own pool and lock backend from the URL and closes them', async () => {
    const db = openTestDatabase(dialect)
    const base = dialect === 'postgres' ? POSTGRES_URL : MYSQL_URL
    const url = `${base}${base.includes('?') ? '&' : '?'}tablePrefix=${db.prefix}`
    const gid = `url-${randomBytes(4).toString('hex')}`
    const tc = createCoordinator({ store: url, recover: false })
    try {
      const r = await tc
        .saga('from-url')
        .step('a', { action: () => 'a' })
        .run({}, { gid })
      expect(r.status).toBe('succeeded')
      expect(await db.sql(`SELECT status FROM ${db.prefix}global WHERE gid = ?`, [gid])).toEqual([
        { status: 'succeeded' },
      ])
    } finally {
      await tc.close()
      await db.dropLocks(`latchkey-tx:tx:${gid}`)
      await db.drop()
    }
  })
})
