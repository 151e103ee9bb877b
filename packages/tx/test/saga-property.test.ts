/**
 * Random sagas (random DAG shapes, failing steps, steps and compensations that fail a few times with retryable
 * errors) against the real coordinator on SQLite, checking the invariants every run must keep. The default run
 * draws 50 sagas (fresh random ones each time, so successive runs cover more); the full run (`npm run test:full`)
 * draws 200.
 */
import fc from 'fast-check'
import { afterAll, describe, expect, it } from 'vitest'
import { type BranchContext, TxError } from '../src/index.js'
import { sqliteHarness } from './support/coordinators.js'
import { FULL_RUN } from './support/full-run.js'

const RUNS = FULL_RUN ? 200 : 50

interface StepSpec {
  /** Indexes of earlier steps this one comes after. */
  after: number[]
  fails: boolean
  /** Retryable errors before the action succeeds (or fails). */
  actionFlakes: number
  compensateFlakes: number
}

const stepSpec = (index: number): fc.Arbitrary<StepSpec> =>
  fc.record({
    after: index === 0 ? fc.constant([]) : fc.uniqueArray(fc.integer({ min: 0, max: index - 1 }), { maxLength: 2 }),
    fails: fc.integer({ min: 0, max: 4 }).map((x) => x === 0),
    actionFlakes: fc.integer({ min: 0, max: 2 }),
    compensateFlakes: fc.integer({ min: 0, max: 2 }),
  })

const sagaSpec = fc
  .integer({ min: 1, max: 5 })
  .chain((n) => fc.tuple(...Array.from({ length: n }, (_, i) => stepSpec(i))))

const h = sqliteHarness()
afterAll(() => h.close())

describe('random sagas', () => {
  it(`keep the invariants over ${RUNS} runs: final state, each start after its dependencies, compensations once, in reverse`, async () => {
    // Three attempts, at most two flakes: no run parks, every run must end succeeded or failed.
    const tc = h.coordinator({ retry: { firstMs: 1, maxMs: 2, attempts: 3 } })
    let n = 0
    await fc.assert(
      fc.asyncProperty(sagaSpec, async (specs) => {
        const log: string[] = []
        const id = (i: number) => `s${i}`
        const flaky = (i: number, op: string, flakes: number, fails: boolean) => (ctx: BranchContext) => {
          if (ctx.attempt <= flakes) throw new TxError(`${id(i)} ${op} flake`, { retryable: true })
          log.push(`${op}:${i}`)
          if (fails) throw new Error(`${id(i)} refused`)
          return i
        }
        let saga = tc.saga(`prop-${n++}`)
        specs.forEach((s, i) => {
          saga = saga.step(id(i), {
            action: flaky(i, 'action', s.actionFlakes, s.fails),
            compensate: flaky(i, 'compensate', s.compensateFlakes, false),
            after: s.after.map(id),
          })
        })
        const r = await saga.run({})
        const actions = log.filter((e) => e.startsWith('action:')).map((e) => Number(e.split(':')[1]))
        const compensations = log.filter((e) => e.startsWith('compensate:')).map((e) => Number(e.split(':')[1]))
        // Each action is applied at most once (flakes throw before applying); each starts after its dependencies.
        expect(new Set(actions).size).toBe(actions.length)
        actions.forEach((i, at) => {
          for (const dep of specs[i]?.after ?? []) expect(actions.slice(0, at)).toContain(dep)
        })
        if (r.status === 'succeeded') {
          expect(specs.some((s) => s.fails)).toBe(false)
          expect(actions.sort()).toEqual(specs.map((_, i) => i))
          expect(compensations).toEqual([])
          return
        }
        expect(r.status).toBe('failed')
        expect(actions.some((i) => specs[i]?.fails)).toBe(true)
        // Every step that started is compensated exactly once, in reverse definition order, after every action.
        expect(compensations).toEqual([...actions].sort((a, b) => b - a))
        expect(log.findIndex((e) => e.startsWith('compensate:'))).toBe(actions.length)
        const tx = await tc.get(r.gid)
        expect(tx?.status).toBe('failed')
      }),
      { numRuns: RUNS },
    )
  })
})
