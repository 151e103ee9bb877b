import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { type BranchContext, TxAbortedError, TxError, TxParkedError } from '../src/index.js'
import { sqliteHarness } from './support/coordinators.js'
import { eventually, latch } from './support/eventually.js'

let h: ReturnType<typeof sqliteHarness>
beforeEach(() => {
  h = sqliteHarness()
})
afterEach(async () => {
  await h.close()
})

/** Records every branch call as `step:op`. */
function recorder() {
  const calls: string[] = []
  const ok = (tag: string, result?: unknown) => (ctx: BranchContext) => {
    calls.push(`${tag}:${ctx.op}`)
    return result
  }
  return { calls, ok }
}

describe('saga', () => {
  it('runs the steps in order, stores their results and reports every transition', async () => {
    const tc = h.coordinator()
    const { calls, ok } = recorder()
    let seen: BranchContext | undefined
    const saga = tc
      .saga<{ sku: string }>('order')
      .step('reserve', { action: ok('reserve', { hold: 7 }), compensate: ok('reserve') })
      .step('charge', {
        action: (ctx) => {
          seen = ctx
          calls.push('charge:action')
          return 'paid'
        },
        compensate: ok('charge'),
      })
    const r = await saga.run({ sku: 'A' }, { gid: 'order-1' })
    expect(r).toEqual({ gid: 'order-1', status: 'succeeded', results: { reserve: { hold: 7 }, charge: 'paid' } })
    expect(calls).toEqual(['reserve:action', 'charge:action'])
    expect(seen).toMatchObject({ gid: 'order-1', branch: 'charge', op: 'action', input: { sku: 'A' }, attempt: 1 })
    expect(seen?.results).toEqual({ reserve: { hold: 7 } })
    const tx = await tc.get('order-1')
    expect(tx?.status).toBe('succeeded')
    expect(tx?.branches.map((b) => `${b.id}:${b.op}:${b.status}:${b.attempts}`)).toEqual([
      'reserve:action:succeeded:1',
      'reserve:compensate:pending:0',
      'charge:action:succeeded:1',
      'charge:compensate:pending:0',
    ])
    expect(tx?.history.map((e) => `${e.type}${e.branch === null ? '' : `:${e.branch}`}`)).toEqual([
      'created',
      'branch-start:reserve',
      'branch-succeeded:reserve',
      'branch-start:charge',
      'branch-succeeded:charge',
      'succeeded',
    ])
    expect(h.events.map((e) => e.type)).toEqual([
      'created',
      'branch-start',
      'branch-succeeded',
      'branch-start',
      'branch-succeeded',
      'succeeded',
    ])
    expect((await tc.list({ status: 'succeeded' })).map((t) => t.gid)).toEqual(['order-1'])
    await expect(saga.run({ sku: 'A' }, { gid: 'order-1' })).rejects.toMatchObject({ code: 'DUPLICATE_GID' })
  })

  it('compensates in reverse order, the failed step included, and never a step that did not start', async () => {
    const tc = h.coordinator()
    const { calls, ok } = recorder()
    const r = await tc
      .saga('order')
      .step('a', { action: ok('a'), compensate: ok('a') })
      .step('b', { action: ok('b'), compensate: ok('b') })
      .step('c', {
        action: () => {
          calls.push('c:action')
          throw new Error('card declined')
        },
        compensate: ok('c'),
      })
      .step('d', { action: ok('d'), compensate: ok('d') })
      .run(null)
    expect(calls).toEqual(['a:action', 'b:action', 'c:action', 'c:compensate', 'b:compensate', 'a:compensate'])
    expect(r.status).toBe('failed')
    expect(r.error).toBeInstanceOf(TxAbortedError)
    expect(r.error).toMatchObject({ code: 'TX_ABORTED', branch: 'c', gid: r.gid })
    expect(r.error?.message).toMatch(/card declined/)
    const tx = await tc.get(r.gid)
    expect(tx?.error).toBe('card declined')
    expect(tx?.branches.filter((b) => b.op === 'action').map((b) => b.status)).toEqual([
      'succeeded',
      'succeeded',
      'failed',
      'pending',
    ])
    expect(tx?.history.map((e) => e.type).filter((t) => t === 'aborting' || t === 'failed')).toEqual([
      'aborting',
      'failed',
    ])
  })

  it('retries a retryable failure with backoff, counting attempts, then succeeds', async () => {
    const tc = h.coordinator({ retry: { firstMs: 5, maxMs: 10, attempts: 5 } })
    const attempts: number[] = []
    const r = await tc
      .saga('flaky')
      .step('call', {
        action: (ctx) => {
          attempts.push(ctx.attempt)
          if (ctx.attempt < 3) throw new TxError('busy', { retryable: true })
          return 'done'
        },
      })
      .run({})
    expect(r.status).toBe('succeeded')
    expect(attempts).toEqual([1, 2, 3])
    const tx = await tc.get(r.gid)
    expect(tx?.branches[0]).toMatchObject({ attempts: 3, status: 'succeeded', lastError: null })
    expect(tx?.history.filter((e) => e.type === 'branch-retry').map((e) => e.detail)).toEqual([
      expect.stringMatching(/^attempt 1 failed \(busy\); next in \d+ ms$/),
      expect.stringMatching(/^attempt 2 failed \(busy\); next in \d+ ms$/),
    ])
  })

  it('parks a step that keeps failing, then tc.retry resumes it where it stopped', async () => {
    const tc = h.coordinator()
    const { calls, ok } = recorder()
    let healthy = false
    const saga = tc
      .saga('parking')
      .step('a', { action: ok('a'), compensate: ok('a') })
      .step('b', {
        action: (ctx) => {
          calls.push(`b:action#${ctx.attempt}`)
          if (!healthy) throw new TxError('payment service down', { retryable: true })
        },
        compensate: ok('b'),
      })
    const r = await saga.run({})
    expect(r.status).toBe('parked')
    expect(r.error).toBeInstanceOf(TxParkedError)
    expect(r.error).toMatchObject({ code: 'TX_PARKED', branch: 'b', op: 'action' })
    expect(h.events.filter((e) => e.type === 'parked')).toHaveLength(1)
    const parked = await tc.get(r.gid)
    expect(parked).toMatchObject({ status: 'parked', parkedFrom: 'submitted' })
    expect(parked?.branches.find((b) => b.id === 'b' && b.op === 'action')?.lastError).toBe('payment service down')
    await expect(tc.retry('no-such-gid')).rejects.toMatchObject({ code: 'NOT_FOUND' })
    healthy = true
    const again = await tc.retry(r.gid)
    expect(again.status).toBe('succeeded')
    expect(calls).toEqual(['a:action', 'b:action#1', 'b:action#2', 'b:action#3', 'b:action#1'])
    await expect(tc.retry(r.gid)).rejects.toMatchObject({ code: 'NOT_PARKED' })
  })

  it('tc.abort compensates a parked forward phase; a parked compensation is only retried', async () => {
    const tc = h.coordinator()
    const { calls, ok } = recorder()
    let refunds = 0
    const r = await tc
      .saga('abortable')
      .step('a', { action: ok('a'), compensate: ok('a') })
      .step('b', {
        action: () => {
          throw new TxError('timeout', { retryable: true })
        },
        compensate: () => {
          calls.push('b:compensate')
          if (++refunds < 5) throw new Error('refund service down')
        },
      })
      .run({})
    expect(r.status).toBe('parked')
    const aborted = await tc.abort(r.gid)
    expect(aborted.status).toBe('parked')
    expect(await tc.get(r.gid)).toMatchObject({ status: 'parked', parkedFrom: 'aborting' })
    await expect(tc.abort(r.gid)).rejects.toMatchObject({ code: 'NOT_ABORTABLE' })
    const done = await tc.retry(r.gid)
    expect(done.status).toBe('failed')
    expect(done.error).toBeInstanceOf(TxAbortedError)
    expect(calls.filter((c) => c === 'a:compensate')).toHaveLength(1)
    expect(calls.filter((c) => c === 'b:compensate')).toHaveLength(5)
  })

  it('a restarted coordinator resumes a transaction: finished steps are not run again', async () => {
    const first = h.coordinator()
    const counts = { a: 0, b: 0, c: 0 }
    const started = latch()
    const define = (tc: typeof first, stall: boolean) =>
      tc
        .saga('resume')
        .step('a', { action: () => ++counts.a })
        .step('b', {
          action: (ctx) => {
            counts.b++
            if (!stall) return `b#${ctx.attempt}`
            started.open()
            // A branch that honours the signal: the coordinator is going away, so it gives up.
            return new Promise((_, reject) => ctx.signal.addEventListener('abort', () => reject(ctx.signal.reason)))
          },
        })
        .step('c', { action: () => ++counts.c })
    const pending = define(first, true).run({ n: 1 }, { gid: 'resume-1', wait: false })
    expect(await pending).toEqual({ gid: 'resume-1', status: 'submitted', results: {} })
    await started.promise
    await first.close()
    expect((await h.coordinator().get('resume-1'))?.status).toBe('submitted')

    const second = h.coordinator()
    define(second, false)
    await second.recoverNow()
    const finished = await eventually(async () => {
      const tx = await second.get('resume-1')
      return tx?.status === 'succeeded' && tx
    })
    expect(counts).toEqual({ a: 1, b: 2, c: 1 })
    expect(finished.branches.find((b) => b.id === 'b' && b.op === 'action')).toMatchObject({
      attempts: 2,
      result: 'b#2',
    })
    expect(finished.history.map((e) => e.type)).toContain('recovered')
  })
})

describe('saga arguments', () => {
  it('rejects bad arguments with TypeError / RangeError before any I/O', async () => {
    const tc = h.coordinator()
    expect(() => tc.saga('')).toThrow(RangeError)
    const saga = tc.saga('args').step('a', { action: () => 1 })
    expect(() => saga.step('a', { action: () => 1 })).toThrow(/already has a step "a"/)
    expect(() => saga.step('b', { action: 'nope' as never })).toThrow(TypeError)
    expect(() => saga.step('b', { action: () => 1, compensate: 3 as never })).toThrow(/compensate must be a function/)
    expect(() => saga.step('bad id!', { action: () => 1 })).toThrow(RangeError)
    await expect(saga.run({}, { gid: 'x'.repeat(200) })).rejects.toThrow(RangeError)
    await expect(saga.run({}, { wait: 'yes' as never })).rejects.toThrow(TypeError)
    await expect(saga.run({ n: 1n })).rejects.toThrow(/JSON-serializable/)
    await expect(tc.saga('empty').run({})).rejects.toThrow(/no steps/)
    expect(() => tc.saga('args')).toThrow(/already defined/)
    await expect(tc.list({ status: 'done' as never })).rejects.toThrow(RangeError)
    await expect(tc.list({ limit: 0 })).rejects.toThrow(RangeError)
    await expect(tc.get('')).rejects.toThrow(RangeError)
    expect(await tc.list()).toEqual([])
  })
})
