import { randomUUID } from 'node:crypto'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { StaleCoordinatorError, storeFromUrl, TxError, type TxStore } from '../src/index.js'
import { DIALECTS, openTestDatabase, type TestDatabase } from './support/databases.js'
import { eventually } from './support/eventually.js'

const newTx = (gid: string) => ({
  gid,
  kind: 'saga' as const,
  name: 'order',
  status: 'submitted' as const,
  input: { qty: 2, note: 'ü' },
  deadlineAt: null,
  branches: [
    { id: 'reserve', op: 'action' as const, seq: 0 },
    { id: 'reserve', op: 'compensate' as const, seq: 0 },
    { id: 'charge', op: 'action' as const, seq: 1 },
    { id: 'charge', op: 'compensate' as const, seq: 1 },
  ],
})

describe.each(DIALECTS)('the durable log on %s', (dialect) => {
  let db: TestDatabase
  let store: TxStore

  beforeAll(async () => {
    db = openTestDatabase(dialect)
    store = db.store()
    // Two stores creating the tables at once, as two coordinators starting together do.
    const other = db.store()
    await Promise.all([store.init(), other.init(), store.init()])
    await other.close()
  })
  afterAll(async () => {
    await store?.close()
    await db?.drop()
  })

  it('creates a transaction with its branches and reads it back', async () => {
    const gid = randomUUID()
    await store.create(newTx(gid), 7n)
    const tx = await store.load(gid)
    expect(tx).toMatchObject({ gid, kind: 'saga', name: 'order', status: 'submitted', input: { qty: 2, note: 'ü' } })
    expect(tx?.token).toBe(7n)
    expect(tx?.branches.map((b) => `${b.seq}:${b.id}:${b.op}:${b.status}:${b.attempts}`)).toEqual([
      '0:reserve:action:pending:0',
      '0:reserve:compensate:pending:0',
      '1:charge:action:pending:0',
      '1:charge:compensate:pending:0',
    ])
    expect(tx?.history.map((h) => [h.type, h.token])).toEqual([['created', 7n]])
    const duplicate = await store.create(newTx(gid), 8n).catch((e: unknown) => e)
    expect(duplicate).toBeInstanceOf(TxError)
    expect((duplicate as TxError).code).toBe('DUPLICATE_GID')
    expect(await store.load(randomUUID())).toBeUndefined()
  })

  it('applies a transition atomically: status, branches and one history entry', async () => {
    const gid = randomUUID()
    await store.create(newTx(gid), 1n)
    await store.write(gid, 1n, {
      branches: [{ id: 'reserve', op: 'action', status: 'running', attempts: 1 }],
      event: { type: 'branch-start', branch: 'reserve', op: 'action' },
    })
    await store.write(gid, 2n, {
      status: 'aborting',
      error: 'no money',
      branches: [{ id: 'reserve', op: 'action', status: 'succeeded', result: { id: 42 }, lastError: null }],
      event: { type: 'branch-succeeded', branch: 'reserve', op: 'action', detail: 'ok' },
    })
    const tx = await store.load(gid)
    expect(tx?.status).toBe('aborting')
    expect(tx?.error).toBe('no money')
    expect(tx?.token).toBe(2n)
    expect(tx?.branches[0]).toMatchObject({ status: 'succeeded', attempts: 1, result: { id: 42 }, lastError: null })
    expect(tx?.history.map((h) => `${h.type}@${h.token}`)).toEqual([
      'created@1',
      'branch-start@1',
      'branch-succeeded@2',
    ])
    // A change naming a branch that does not exist rolls the whole transition back.
    await expect(
      store.write(gid, 2n, { status: 'failed', branches: [{ id: 'nope', op: 'action' }], event: { type: 'x' } }),
    ).rejects.toMatchObject({ code: 'NOT_FOUND' })
    expect((await store.load(gid))?.status).toBe('aborting')
    expect((await store.load(gid))?.history).toHaveLength(3)
  })

  it('refuses, with StaleCoordinatorError, a write whose token was overtaken, and keeps nothing of it', async () => {
    const gid = randomUUID()
    await store.create(newTx(gid), 5n)
    await store.write(gid, 9n, { event: { type: 'recovered' } })
    const error = await store
      .write(gid, 5n, {
        status: 'succeeded',
        branches: [{ id: 'charge', op: 'action', status: 'succeeded' }],
        event: { type: 'late' },
      })
      .catch((e: unknown) => e)
    expect(error).toBeInstanceOf(StaleCoordinatorError)
    expect(error).toMatchObject({ code: 'STALE_COORDINATOR', gid, token: 5n, current: 9n, retryable: false })
    const tx = await store.load(gid)
    expect(tx?.status).toBe('submitted')
    expect(tx?.branches.find((b) => b.id === 'charge' && b.op === 'action')?.status).toBe('pending')
    expect(tx?.history.map((h) => h.type)).toEqual(['created', 'recovered'])
    await expect(store.write(randomUUID(), 1n, { event: { type: 'x' } })).rejects.toMatchObject({ code: 'NOT_FOUND' })
  })

  it('serializes concurrent writers: once a higher token has written, every lower one fails', async () => {
    const gid = randomUUID()
    await store.create(newTx(gid), 1n)
    const other = db.store()
    const tokens = [2n, 3n, 4n, 5n, 6n, 7n]
    const results = await Promise.allSettled(
      tokens.map((t, i) => (i % 2 === 0 ? store : other).write(gid, t, { event: { type: `w${t}` } })),
    )
    await other.close()
    const history = (await store.load(gid))?.history ?? []
    const written = history.slice(1).map((h) => h.token)
    // The writes that got through did so in increasing token order, and each refused one came after a higher one.
    expect([...written].sort((a, b) => (a < b ? -1 : 1))).toEqual(written)
    expect(written).toContain(7n)
    results.forEach((r, i) => {
      if (r.status === 'rejected') expect(r.reason).toBeInstanceOf(StaleCoordinatorError)
      else expect(written).toContain(tokens[i])
    })
  })

  it('creates a transaction together with its first transition, and merges earlier history entries into a write', async () => {
    const gid = randomUUID()
    await store.create(newTx(gid), 1n, {
      branches: [{ id: 'reserve', op: 'action', status: 'running', attempts: 1 }],
      event: { type: 'branch-start', branch: 'reserve', op: 'action' },
    })
    await store.write(gid, 1n, {
      branches: [
        { id: 'reserve', op: 'action', status: 'succeeded', result: { id: 1 }, lastError: null },
        { id: 'charge', op: 'action', status: 'running', attempts: 1 },
      ],
      earlier: [{ type: 'branch-succeeded', branch: 'reserve', op: 'action' }],
      event: { type: 'branch-start', branch: 'charge', op: 'action' },
    })
    const tx = await store.load(gid)
    expect(tx?.branches.map((b) => `${b.id}/${b.op}:${b.status}:${b.attempts}`)).toEqual([
      'reserve/action:succeeded:1',
      'reserve/compensate:pending:0',
      'charge/action:running:1',
      'charge/compensate:pending:0',
    ])
    expect(tx?.branches[0]?.result).toEqual({ id: 1 })
    expect(tx?.history.map((h) => `${h.type}:${h.branch ?? ''}`)).toEqual([
      'created:',
      'branch-start:reserve',
      'branch-succeeded:reserve',
      'branch-start:charge',
    ])
    // A first transition naming an unknown branch creates nothing.
    const other = randomUUID()
    await expect(
      store.create(newTx(other), 1n, { branches: [{ id: 'nope', op: 'action' }], event: { type: 'x' } }),
    ).rejects.toMatchObject({ code: 'NOT_FOUND' })
    expect(await store.load(other)).toBeUndefined()
  })

  it('row leases: the create takes one, a claim takes it over only once it expired or was released, raising the token', async () => {
    const gid = randomUUID()
    await store.create({ ...newTx(gid), leaseMs: 60_000 }, 1n)
    expect(await store.claim?.(gid, 60_000)).toBeUndefined()
    expect(await store.unfinished(1000, { claimable: true })).not.toContain(gid)
    expect(await store.renew?.(gid, 1n, 60_000)).toBe(true)
    await store.release?.(gid, 1n)
    expect(await store.unfinished(1000, { claimable: true })).toContain(gid)
    expect(await store.claim?.(gid, 60_000)).toBe(2n)
    // The first holder is overtaken: it can neither renew nor write, nor release the new holder's lease.
    expect(await store.renew?.(gid, 1n, 60_000)).toBe(false)
    await store.release?.(gid, 1n)
    expect(await store.claim?.(gid, 60_000)).toBeUndefined()
    await expect(store.write(gid, 1n, { event: { type: 'late' } })).rejects.toBeInstanceOf(StaleCoordinatorError)
    // A write extends the lease; one carrying leaseMs 0 releases it; an expired one is claimable too.
    await store.write(gid, 2n, { leaseMs: 0, event: { type: 'released' } })
    expect(await store.claim?.(gid, 1)).toBe(3n)
    await eventually(async () => (await store.unfinished(1000, { claimable: true })).includes(gid))
    expect(await store.claim?.(gid, 60_000)).toBe(4n)
    expect(await store.claim?.(randomUUID(), 60_000)).toBeUndefined()
    expect((await store.load(gid))?.history.map((h) => h.type)).toEqual(['created', 'released'])
  })

  it('lists and finds unfinished transactions; remove deletes everything of a gid', async () => {
    const a = `list-${randomUUID()}`
    const b = `list-${randomUUID()}`
    await store.create(newTx(a), 1n)
    await store.create({ ...newTx(b), kind: 'tcc', status: 'prepared', branches: [] }, 1n)
    await store.write(a, 1n, { status: 'succeeded', event: { type: 'status' } })
    const tcc = await store.list({ kind: 'tcc' })
    expect(tcc.map((t) => t.gid)).toContain(b)
    expect(tcc.every((t) => t.kind === 'tcc')).toBe(true)
    expect((await store.list({ status: 'succeeded', limit: 1000 })).map((t) => t.gid)).toContain(a)
    expect((await store.list({ limit: 1 })).length).toBe(1)
    const unfinished = await store.unfinished(1000)
    expect(unfinished).toContain(b)
    expect(unfinished).not.toContain(a)
    await store.remove([a, b])
    expect(await store.load(a)).toBeUndefined()
    expect(await db.sql(`SELECT gid FROM ${db.prefix}history WHERE gid = ?`, [a])).toEqual([])
  })
})

describe('store options', () => {
  it('rejects bad stores and prefixes before any I/O', () => {
    expect(() => storeFromUrl('redis://x')).toThrow(RangeError)
    expect(() => storeFromUrl('')).toThrow(TypeError)
    expect(() => storeFromUrl('sqlite:/tmp/x.db?tablePrefix=bad;drop')).toThrow(/tablePrefix/)
    expect(() => storeFromUrl('mysql://root:secret@[bad')).toThrow(/mysql:\/\/root:\*\*\*|cannot be parsed/)
  })
})
