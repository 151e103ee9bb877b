/**
 * 3PC crash at every step: a committing and a refused transfer are traced once uninterrupted (every crash point
 * the coordinator passes), then, for each point, a coordinator process SIGKILLs itself there and a fresh
 * coordinator recovers the transaction. The participants are two service processes whose timeout (30 s) outlasts
 * the recovery, so this checks the coordinator's own recovery from the log: the outcome of the uninterrupted
 * run, every effect once, never a mixed outcome. (What participants do alone when the coordinator stays away is
 * in `three-phase-crash.test.ts`.)
 */
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createCoordinator } from '../src/index.js'
import { tempDir } from './support/databases.js'
import { eventually } from './support/eventually.js'
import {
  bankOf,
  crashCoordinator,
  type ParticipantProcess,
  startParticipant,
  traceCoordinator,
} from './support/three-phase-processes.js'
import { defineTransfer } from './support/three-phase-transfer.js'

const SCENARIOS = [
  { name: 'commit', input: { amounts: { a: -30, b: 30 } }, status: 'succeeded', effects: ['preCommit', 'doCommit'] },
  { name: 'no-vote', input: { amounts: { a: -30, b: 30 }, refuse: 'b' }, status: 'failed', effects: [] },
] as const

const tmp = tempDir()
let a: ParticipantProcess
let b: ParticipantProcess
const urls = () => ({ a: a.url, b: b.url })
a = await startParticipant(join(tmp.dir, 'a.db'), 30_000)
b = await startParticipant(join(tmp.dir, 'b.db'), 30_000)

const cases: { scenario: (typeof SCENARIOS)[number]; key: string; i: number }[] = []
for (const scenario of SCENARIOS) {
  const { points, last } = await traceCoordinator({
    storeUrl: `sqlite:${join(tmp.dir, `trace-${scenario.name}.db`)}`,
    kind: '3pc',
    gid: `trace-${scenario.name}`,
    urls: urls(),
    input: scenario.input,
  })
  if (!last.startsWith(`finished ${scenario.status}`))
    throw new Error(`the ${scenario.name} trace ended with "${last}"`)
  for (const key of points) cases.push({ scenario, key, i: cases.length })
}

describe('3PC: crash at every step, then recovery', () => {
  beforeAll(() => {
    expect(cases.length).toBeGreaterThan(25)
  })
  afterAll(async () => {
    // Every transfer was all-or-nothing: the two banks together still hold what they started with.
    const total = bankOf(a.dbPath, '-').bal + bankOf(b.dbPath, '-').bal
    await a?.kill()
    await b?.kill()
    tmp.remove()
    expect(total).toBe(200)
  })

  it.concurrent.each(cases)(
    'SIGKILL: $scenario.name @ $key',
    async ({ scenario, key, i }) => {
      const storeUrl = `sqlite:${join(tmp.dir, `tx-${i}.db`)}`
      const gid = `m3-${i}`
      await crashCoordinator({ storeUrl, kind: '3pc', gid, urls: urls(), crashAt: key, input: scenario.input })
      const tc = createCoordinator({ store: storeUrl, recoverEveryMs: 50, retry: { firstMs: 20, maxMs: 100 } })
      defineTransfer(tc, urls())
      try {
        const done = await eventually(async () => {
          const tx = await tc.get(gid)
          return (tx?.status === 'succeeded' || tx?.status === 'failed') && tx
        }, 20_000)
        expect(done.status).toBe(scenario.status)
        expect(done.history.some((h) => h.type === 'heuristic-mixed')).toBe(false)
        for (const p of [a, b]) {
          // Effects once each; who committed (the coordinator or, on a slow machine, the timeout) may differ.
          expect(bankOf(p.dbPath, gid).effects.map((e) => e.split(' ')[0])).toEqual(scenario.effects)
        }
      } finally {
        await tc.close()
      }
    },
    60_000,
  )
})
