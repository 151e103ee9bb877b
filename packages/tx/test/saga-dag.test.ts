import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import type { BranchContext } from '../src/index.js'
import { sqliteHarness } from './support/coordinators.js'
import { latch } from './support/eventually.js'

let h: ReturnType<typeof sqliteHarness>
beforeEach(() => {
  h = sqliteHarness()
})
afterEach(async () => {
  await h.close()
})

/** Waits for `p`, failing (non-retryable) after `ms`: a step that would wait forever if run sequentially. */
function within<T>(p: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} never happened`)), ms)
  })
  return Promise.race([p, timeout]).finally(() => clearTimeout(timer))
}

describe('saga as a DAG', () => {
  it('runs steps whose dependencies are met concurrently, and a join after both', async () => {
    const tc = h.coordinator()
    const bIn = latch()
    const cIn = latch()
    let joined: Readonly<Record<string, unknown>> | undefined
    const r = await tc
      .saga('dag')
      .step('a', { action: () => 'a' })
      .step('b', {
        action: async () => {
          bIn.open()
          await within(cIn.promise, 5_000, 'c running beside b')
          return 'b'
        },
        after: ['a'],
      })
      .step('c', {
        action: async () => {
          cIn.open()
          await within(bIn.promise, 5_000, 'b running beside c')
          return 'c'
        },
        after: ['a'],
      })
      .step('d', {
        action: (ctx: BranchContext) => {
          joined = ctx.results
          return 'd'
        },
        after: ['b', 'c'],
      })
      .run({})
    expect(r.status).toBe('succeeded')
    expect(joined).toEqual({ a: 'a', b: 'b', c: 'c' })
    const starts = (await tc.get(r.gid))?.history.filter((e) => e.type === 'branch-start').map((e) => e.branch)
    expect(starts?.[0]).toBe('a')
    expect(starts?.slice(1, 3).sort()).toEqual(['b', 'c'])
    expect(starts?.[3]).toBe('d')
  })

  it('when a step fails, its running sibling finishes before aborting; compensation runs in reverse order', async () => {
    const tc = h.coordinator()
    const calls: string[] = []
    const bFailing = latch()
    const undo = (id: string) => () => void calls.push(`${id}:compensate`)
    const r = await tc
      .saga('dag-fail')
      .step('a', { action: () => calls.push('a'), compensate: undo('a') })
      .step('b', {
        action: () => {
          calls.push('b')
          bFailing.open()
          throw new Error('b refused')
        },
        compensate: undo('b'),
        after: ['a'],
      })
      .step('c', {
        action: async () => {
          await bFailing.promise
          calls.push('c')
        },
        compensate: undo('c'),
        after: ['a'],
      })
      .step('d', { action: () => calls.push('d'), compensate: undo('d'), after: ['b', 'c'] })
      .run({})
    expect(r.status).toBe('failed')
    expect(r.error).toMatchObject({ code: 'TX_ABORTED', branch: 'b' })
    expect(calls).toEqual(['a', 'b', 'c', 'c:compensate', 'b:compensate', 'a:compensate'])
    const types = (await tc.get(r.gid))?.history.map((e) => `${e.type}:${e.branch ?? ''}`) ?? []
    expect(types.indexOf('aborting:')).toBeGreaterThan(types.indexOf('branch-succeeded:c'))
  })

  it('after: [] makes a root step; unknown or malformed dependencies are refused before any I/O', async () => {
    const tc = h.coordinator()
    const order: string[] = []
    const saga = tc.saga('roots').step('a', { action: () => order.push('a') })
    expect(() => saga.step('x', { action: () => 1, after: ['nope'] })).toThrow(/not a step defined before it/)
    expect(() => saga.step('x', { action: () => 1, after: 'a' as never })).toThrow(TypeError)
    saga.step('b', { action: () => order.push('b'), after: [] })
    const r = await saga.run({})
    expect(r.status).toBe('succeeded')
    expect(order.sort()).toEqual(['a', 'b'])
  })
})
