/**
 * 3PC crash at every step: a committing and a refused transfer are traced once uninterrupted (every crash point
 * the coordinator passes), then, for each point, a coordinator process SIGKILLs itself there and a fresh
 * coordinator recovers the transaction. The participants are two service processes whose timeout (30 s) outlasts
 * the recovery, so this checks the coordinator's own recovery from the log: the outcome of the uninterrupted
 * run, every effect once, never a mixed outcome. (What participants do alone when the coordinator stays away is
 * in `three-phase-crash.test.ts`.)
 *
 * The default run takes the SMOKE rows (every phase of both scenarios); the full run (`npm run test:full`) takes
 * every traced point (36).
 */
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createCoordinator } from '../src/index.js'
import { tempDir } from './support/databases.js'
import { eventually } from './support/eventually.js'
import { smokeOrFull } from './support/full-run.js'
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

/**
 * One row per situation a crash can leave the 3PC log in; the points between them are the same situations for
 * the other participant. Together they reach every crash-point label.
 */
const SMOKE = [
  // The create is written with a's canCommit running mark.
  'commit @ after-log:created',
  // b voted yes, its vote not logged: asked again.
  'commit @ after-branch-call b/canCommit#1',
  // The preCommit decision logged, no preCommit sent.
  'commit @ after-log:status pre-commit',
  // a pre-committed, not logged.
  'commit @ after-branch-call a/preCommit#1',
  // Every preCommit ack logged, the commit decision not yet.
  'commit @ after-log:branch-succeeded b/preCommit#1',
  // The commit decision logged, no doCommit sent.
  'commit @ after-log:status submitted',
  // a committed, not logged: its doCommit repeated, applied once.
  'commit @ after-branch-call a/doCommit#1',
  // Finished: recovery must not touch it.
  'commit @ after-log:status succeeded',
  // b refused, its refusal not logged.
  'no-vote @ after-branch-call b/canCommit#1',
  // The abort decision logged, no abort sent.
  'no-vote @ after-log:status aborting',
  // b aborted, not logged; then a's abort running.
  'no-vote @ after-branch-call b/abort#1',
  'no-vote @ after-log:branch-running a/abort#1',
]

const tmp = tempDir()
let a: ParticipantProcess
let b: ParticipantProcess
const urls = () => ({ a: a.url, b: b.url })
// Started together: each start is mostly a process loading tsx, seconds on a loaded machine.
;[a, b] = await Promise.all([
  startParticipant(join(tmp.dir, 'a.db'), 30_000),
  startParticipant(join(tmp.dir, 'b.db'), 30_000),
])

// Both traces at once: separate gids and logs, as the cases below share the two participants.
const traces = await Promise.all(
  SCENARIOS.map((scenario) =>
    traceCoordinator({
      storeUrl: `sqlite:${join(tmp.dir, `trace-${scenario.name}.db`)}`,
      kind: '3pc',
      gid: `trace-${scenario.name}`,
      urls: urls(),
      input: scenario.input,
    }),
  ),
)
const traced: { scenario: (typeof SCENARIOS)[number]; key: string; i: number }[] = []
SCENARIOS.forEach((scenario, s) => {
  const { points, last } = traces[s] as Awaited<ReturnType<typeof traceCoordinator>>
  if (!last.startsWith(`finished ${scenario.status}`))
    throw new Error(`the ${scenario.name} trace ended with "${last}"`)
  for (const key of points) traced.push({ scenario, key, i: traced.length })
})
const title = (c: (typeof traced)[number]) => `${c.scenario.name} @ ${c.key}`
const cases = smokeOrFull(traced, (c) => SMOKE.includes(title(c)))

describe('3PC: crash at every step, then recovery', () => {
  beforeAll(() => {
    expect(traced.length).toBeGreaterThan(25)
  })

  it('the smoke rows are traced points and reach every crash-point label', () => {
    expect(SMOKE.filter((t) => !traced.some((c) => title(c) === t))).toEqual([])
    const labels = (rows: readonly string[]) => new Set(rows.map((r) => r.split(' ')[2]))
    const smoke = labels(SMOKE)
    expect([...labels(traced.map(title))].filter((l) => !smoke.has(l))).toEqual([])
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
