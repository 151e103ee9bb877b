/**
 * latchkey-tx/fastify on each database: a real fastify server with the participant plugin, called by a
 * coordinator's http() branches and by hand (DTM's query-string shape, duplicates, disorder).
 */
import Fastify, { type FastifyInstance } from 'fastify'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { BranchFailure, BranchOngoing, txParticipant } from '../src/fastify/index.js'
import { http } from '../src/http/index.js'
import { TxAbortedError } from '../src/index.js'
import { type LedgerDb, openLedgerDb } from './support/chaos/ledger-db.js'
import { sqliteHarness } from './support/coordinators.js'
import { DIALECTS, tempDir, uniquePrefix } from './support/databases.js'

interface Move {
  amount: number
  mode?: 'ongoing' | 'crash' | 'bigint'
}

describe.each(DIALECTS)('the fastify participant plugin on %s', (dialect) => {
  const tmp = tempDir()
  const h = sqliteHarness()
  let ledger: LedgerDb
  let app: FastifyInstance
  let base: string
  const modeCalls: string[] = []

  beforeAll(async () => {
    ledger = openLedgerDb(dialect, uniquePrefix('lfy'), `${tmp.dir}/ledger.db`)
    await ledger.create({ 1: 100 })
    const move =
      (sign: number) => async (trx: unknown, call: { gid: string; branch: string; op: string; input: unknown }) => {
        const input = call.input as Move
        if (input.mode === 'ongoing' || input.mode === 'crash') {
          modeCalls.push(input.mode)
          if (input.mode === 'ongoing') throw new BranchOngoing('not yet')
          throw new Error('disk on fire')
        }
        const ok = await ledger.apply(trx, {
          gid: call.gid,
          branch: call.branch,
          op: call.op,
          id: 1,
          delta: sign * input.amount,
        })
        if (!ok) throw new BranchFailure('insufficient funds')
        return input.mode === 'bigint' ? { moved: BigInt(sign * input.amount) } : { moved: sign * input.amount }
      }
    app = Fastify({ logger: false })
    await app.register(txParticipant, {
      db: ledger.db,
      barrierTable: ledger.tables.barrier,
      routes: { '/out': { action: move(-1), compensate: move(1), try: move(-1), cancel: move(1) } },
    })
    base = await app.listen({ port: 0, host: '127.0.0.1' })
  })
  afterAll(async () => {
    await app?.close()
    await h.close()
    await ledger?.close(true)
    tmp.remove()
  })

  const post = async (path: string, body: unknown) => {
    const res = await fetch(`${base}${path}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(body),
    })
    return { status: res.status, body: (await res.json()) as Record<string, unknown> }
  }
  const saga = (name: string) =>
    h
      .coordinator()
      .saga<Move>(name)
      .step('out', { action: http(`${base}/out`), compensate: http(`${base}/out`) })

  it('a saga step through http(): applied once in the local transaction, its JSON result stored', async () => {
    const before = await ledger.balance(1)
    const r = await saga('fy-ok').run({ amount: 7 })
    expect(r.status).toBe('succeeded')
    expect(r.results.out).toEqual({ moved: -7 })
    expect(await ledger.balance(1)).toBe(before - 7)
    expect(await ledger.effects(r.gid)).toEqual(['out:action'])
  })

  it('a BranchFailure answers 409: the saga fails, the compensation is a null compensation, nothing moved', async () => {
    const before = await ledger.balance(1)
    const r = await saga('fy-refused').run({ amount: 1_000_000 })
    expect(r.status).toBe('failed')
    expect(r.error).toBeInstanceOf(TxAbortedError)
    expect(await ledger.balance(1)).toBe(before)
    expect(await ledger.effects(r.gid)).toEqual([])
    const reasons = await ledger.query(ledger.db, `SELECT op, reason FROM ${ledger.tables.barrier} WHERE gid = ?`, [
      r.gid,
    ])
    expect(reasons.map((x) => `${x.op}<-${x.reason}`).sort()).toEqual(['action<-compensate', 'compensate<-compensate'])
  })

  it('a repeated call is answered as a duplicate and applied once', async () => {
    const call = { gid: `${uniquePrefix('g')}dup`, branch: 'out', op: 'action', input: { amount: 3 } }
    const first = await post('/out', call)
    const again = await Promise.all([post('/out', call), post('/out', call)])
    expect(first).toEqual({ status: 200, body: { moved: -3 } })
    expect(again.map((a) => a.body.barrier)).toEqual(['duplicate', 'duplicate'])
    expect(await ledger.effects(call.gid)).toEqual(['out:action'])
  })

  it("DTM's disorder: cancel before try is a null compensation, the late try is refused (hanging)", async () => {
    const before = await ledger.balance(1)
    const gid = `${uniquePrefix('g')}hang`
    const cancel = { gid, branch: 'out', op: 'cancel', input: { amount: 5 } }
    expect((await post('/out', cancel)).body).toEqual({ dtm_result: 'SUCCESS', barrier: 'null-compensation' })
    expect((await post('/out', cancel)).body.barrier).toBe('duplicate')
    expect((await post('/out', { ...cancel, op: 'try' })).body).toEqual({ dtm_result: 'SUCCESS', barrier: 'hanging' })
    expect(await ledger.balance(1)).toBe(before)
    expect(await ledger.effects(gid)).toEqual([])
  })

  it("reads DTM's query string (gid, trans_type, branch_id, op) with the payload as the body", async () => {
    const gid = `${uniquePrefix('g')}dtm`
    const q = (op: string) => `/out?gid=${gid}&trans_type=saga&branch_id=01&op=${op}`
    expect(await post(q('action'), { amount: 2 })).toEqual({ status: 200, body: { moved: -2 } })
    expect(await post(q('compensate'), { amount: 2 })).toEqual({ status: 200, body: { moved: 2 } })
    expect((await post(q('compensate'), { amount: 2 })).body.barrier).toBe('duplicate')
    expect(await ledger.effects(gid)).toEqual(['01:action', '01:compensate'])
    const refused = await post(q('action').replace('op=action', 'op=refund'), { amount: 2 })
    expect(refused.status).toBe(400)
    expect(refused.body.message).toMatch(/op must be one of .* \(in the query string\), received "refund"/)
  })

  it('BranchOngoing answers 425 and any other error 500; both roll back, barrier row included', async () => {
    const gid = `${uniquePrefix('g')}err`
    const ongoing = await post('/out', { gid, branch: 'out', op: 'action', input: { amount: 1, mode: 'ongoing' } })
    expect(ongoing).toEqual({ status: 425, body: { dtm_result: 'ONGOING', message: 'not yet' } })
    const crash = await post('/out', { gid, branch: 'out', op: 'action', input: { amount: 1, mode: 'crash' } })
    expect(crash).toEqual({ status: 500, body: { message: 'disk on fire' } })
    expect(modeCalls).toEqual(['ongoing', 'crash'])
    // The row was rolled back with the failed call, so the call that works applies.
    expect(await post('/out', { gid, branch: 'out', op: 'action', input: { amount: 1 } })).toEqual({
      status: 200,
      body: { moved: -1 },
    })
    expect((await post('/out', { gid, op: 'action' })).status).toBe(400)
  })

  it('a result that is not JSON answers 500 and rolls the effect back', async () => {
    const gid = `${uniquePrefix('g')}big`
    const bad = await post('/out', { gid, branch: 'out', op: 'action', input: { amount: 4, mode: 'bigint' } })
    expect(bad.status).toBe(500)
    expect(bad.body.message).toMatch(/BigInt/)
    expect(await ledger.effects(gid)).toEqual([])
  })
})

describe('txParticipant options', () => {
  const register = async (options: unknown) => {
    const app = Fastify()
    try {
      await app.register(txParticipant, options as never)
      await app.ready()
    } finally {
      await app.close()
    }
  }
  it('refuses a bad db, routes, op, handler, table or isolation before any I/O', async () => {
    const db = { prepare: () => undefined, exec: () => undefined, inTransaction: false }
    await expect(register({ db: {}, routes: { '/a': {} } })).rejects.toThrow(/db must be a pg Pool.*received object/)
    await expect(register({ db, routes: {} })).rejects.toThrow(TypeError)
    await expect(register({ db, routes: { a: {} } })).rejects.toThrow(/route "a" must start with \//)
    await expect(register({ db, routes: { '/a': { refund: () => 1 } } })).rejects.toThrow(/has op "refund"/)
    await expect(register({ db, routes: { '/a': { action: 1 } } })).rejects.toThrow(/\.action must be a function/)
    await expect(register({ db, routes: { '/a': {} }, barrierTable: 'x; drop' })).rejects.toThrow(RangeError)
    await expect(register({ db, routes: { '/a': {} }, isolation: 'DIRTY' })).rejects.toThrow(/isolation must be one of/)
  })
})
