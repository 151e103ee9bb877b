import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { type BranchContext, TxAbortedError, TxError, TxTimeoutError } from '../src/index.js'
import { sqliteHarness } from './support/coordinators.js'

let h: ReturnType<typeof sqliteHarness>
beforeEach(() => {
  h = sqliteHarness()
})
afterEach(async () => {
  await h.close()
})

function participant(calls: string[], name: string, fail: Partial<Record<'try' | 'confirm' | 'cancel', number>> = {}) {
  const op = (kind: 'try' | 'confirm' | 'cancel') => (ctx: BranchContext) => {
    calls.push(`${name}:${kind}`)
    if (ctx.attempt <= (fail[kind] ?? 0)) {
      throw kind === 'try' ? new Error(`${name} refused`) : new Error(`${name} ${kind} down`)
    }
    return `${name}-${kind}`
  }
  return { try: op('try'), confirm: op('confirm'), cancel: op('cancel') }
}

describe('tcc', () => {
  it('tries every participant, writes the decision, then confirms them all', async () => {
    const tc = h.coordinator()
    const calls: string[] = []
    const r = await tc
      .tcc('transfer', { out: participant(calls, 'out'), in: participant(calls, 'in') })
      .run({ amount: 5 })
    expect(r.status).toBe('succeeded')
    expect(r.results).toEqual({ out: 'out-try', in: 'in-try' })
    expect(calls).toEqual(['out:try', 'in:try', 'out:confirm', 'in:confirm'])
    const tx = await tc.get(r.gid)
    const types = tx?.history.map((e) => `${e.type}${e.op === null ? '' : `:${e.branch}:${e.op}`}`) ?? []
    expect(types.indexOf('submitted')).toBeGreaterThan(types.indexOf('branch-succeeded:in:try'))
    expect(types.indexOf('submitted')).toBeLessThan(types.indexOf('branch-start:out:confirm'))
    expect(tx?.kind).toBe('tcc')
  })

  it('a failed try cancels every participant (also one never tried) and never confirms', async () => {
    const tc = h.coordinator()
    const calls: string[] = []
    const r = await tc
      .tcc('transfer', {
        a: participant(calls, 'a'),
        b: participant(calls, 'b', { try: 1 }),
        c: participant(calls, 'c'),
      })
      .run({})
    expect(r.status).toBe('failed')
    expect(r.error).toBeInstanceOf(TxAbortedError)
    expect(r.error).toMatchObject({ branch: 'b' })
    expect(calls).toEqual(['a:try', 'b:try', 'c:cancel', 'b:cancel', 'a:cancel'])
  })

  it('retries confirm until it succeeds, whatever it throws; parks it when retries run out; abort is refused then', async () => {
    const tc = h.coordinator()
    const calls: string[] = []
    const ok = await tc.tcc('confirming', { a: participant(calls, 'a', { confirm: 2 }) }).run({})
    expect(ok.status).toBe('succeeded')
    expect(calls).toEqual(['a:try', 'a:confirm', 'a:confirm', 'a:confirm'])

    calls.length = 0
    const parked = await tc.tcc('stuck', { a: participant(calls, 'a', { confirm: 99 }) }).run({})
    expect(parked.status).toBe('parked')
    expect(await tc.get(parked.gid)).toMatchObject({ parkedFrom: 'submitted' })
    await expect(tc.abort(parked.gid)).rejects.toMatchObject({ code: 'NOT_ABORTABLE' })
    expect(calls).toEqual(['a:try', 'a:confirm', 'a:confirm', 'a:confirm'])
  })

  it('aborts the try phase past timeoutMs and cancels', async () => {
    const tc = h.coordinator({ timeoutMs: 60, retry: { firstMs: 5, maxMs: 10, attempts: 10_000 } })
    const calls: string[] = []
    const r = await tc
      .tcc('slow', {
        a: participant(calls, 'a'),
        b: {
          ...participant(calls, 'b'),
          try: () => {
            throw new TxError('still busy', { retryable: true })
          },
        },
      })
      .run({})
    expect(r.status).toBe('failed')
    expect(r.error).toBeInstanceOf(TxTimeoutError)
    expect(r.error?.code).toBe('TX_TIMEOUT')
    expect(calls.filter((c) => c.endsWith('cancel'))).toEqual(['b:cancel', 'a:cancel'])
    expect(calls).not.toContain('a:confirm')
  })

  it('tc.abort cancels a TCC parked in its try phase', async () => {
    const tc = h.coordinator()
    const calls: string[] = []
    const t = tc.tcc('parked-try', {
      a: participant(calls, 'a'),
      b: {
        ...participant(calls, 'b'),
        try: () => {
          throw new TxError('b unreachable', { retryable: true })
        },
      },
    })
    const r = await t.run({})
    expect(await tc.get(r.gid)).toMatchObject({ status: 'parked', parkedFrom: 'prepared' })
    const aborted = await tc.abort(r.gid)
    expect(aborted.status).toBe('failed')
    expect(calls.filter((c) => c.endsWith('cancel'))).toEqual(['b:cancel', 'a:cancel'])
  })

  it('rejects bad participants before any I/O', () => {
    const tc = h.coordinator()
    expect(() => tc.tcc('x', {})).toThrow(TypeError)
    expect(() => tc.tcc('y', { a: { try: () => 1, confirm: () => 1 } as never })).toThrow(/cancel must be a function/)
    expect(() => tc.tcc('z', { 'a b': participant([], 'a') })).toThrow(RangeError)
  })
})
