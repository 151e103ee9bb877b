/**
 * Three-phase commit against real processes: two participant services (each its own SQLite database, state kept
 * by `threePhaseParticipant`), coordinators as child processes that SIGKILL themselves at a crash point, and a
 * TCP proxy that partitions one participant. What 3PC survives that 2PC does not (a coordinator dying after
 * preCommit reached everyone), what it does not survive (a partition that splits the participants), and its
 * two abort paths (a no vote; a participant that timed out before preCommit).
 */
import { join } from 'node:path'
import { afterAll, afterEach, beforeEach, describe, expect, it } from 'vitest'
import { type Coordinator, createCoordinator, TxHeuristicError } from '../src/index.js'
import { tempDir } from './support/databases.js'
import { eventually } from './support/eventually.js'
import { type PartitionProxy, partitionProxy } from './support/partition-proxy.js'
import { bankOf, crashCoordinator, type ParticipantProcess, startParticipant } from './support/three-phase-processes.js'
import { defineTransfer } from './support/three-phase-transfer.js'

/** The participants' timeout: how long they wait for the coordinator's next message before acting alone. */
const PARTICIPANT_TIMEOUT_MS = 6_000
const INPUT = { amounts: { a: -30, b: 30 } }

const tmp = tempDir()
afterAll(() => tmp.remove())
let n = 0

describe('three-phase commit with real processes', () => {
  let a: ParticipantProcess
  let b: ParticipantProcess
  let storeUrl: string
  const opened: Coordinator[] = []
  const coordinator = (recover: boolean, urls = { a: a.url, b: b.url }, httpTimeoutMs?: Record<string, number>) => {
    const tc = createCoordinator({
      store: storeUrl,
      recover,
      recoverEveryMs: 50,
      timeoutMs: 30_000,
      retry: { firstMs: 20, maxMs: 100, attempts: 1_000 },
    })
    opened.push(tc)
    return { tc, ...defineTransfer(tc, urls, httpTimeoutMs) }
  }

  beforeEach(async () => {
    n++
    storeUrl = `sqlite:${join(tmp.dir, `tx-${n}.db`)}`
    // Started together: each start is mostly a process loading tsx, seconds on a loaded machine.
    ;[a, b] = await Promise.all([
      startParticipant(join(tmp.dir, `a-${n}.db`), PARTICIPANT_TIMEOUT_MS),
      startParticipant(join(tmp.dir, `b-${n}.db`), PARTICIPANT_TIMEOUT_MS),
    ])
  })
  afterEach(async () => {
    for (const tc of opened.splice(0)) await tc.close()
    await a.kill()
    await b.kill()
  })

  it('survives what 2PC does not: the coordinator is SIGKILLed after preCommit reached everyone; the participants commit on their own timeout, and the restarted coordinator agrees', async () => {
    const gid = 'c3-survive'
    await crashCoordinator({
      storeUrl,
      kind: '3pc',
      gid,
      urls: { a: a.url, b: b.url },
      // Right after b's ack: with a branch's success carried by the next write, nothing more is logged yet.
      crashAt: 'after-branch-call b/preCommit#1',
    })
    // The coordinator is gone and its log holds no commit decision, only the preCommit decision.
    const { tc: viewer } = coordinator(false)
    const logged = await viewer.get(gid)
    expect(logged?.status).toBe('prepared')
    expect(logged?.history.map((h) => h.type)).toContain('pre-commit')
    expect(bankOf(a.dbPath, gid).state).toBe('precommitted')
    expect(bankOf(b.dbPath, gid).state).toBe('precommitted')

    // The participant's own restart does not lose its timeout: its state is in its database.
    await a.kill()
    a = await startParticipant(a.dbPath, PARTICIPANT_TIMEOUT_MS, a.port)

    // With no coordinator at all, both commit on their own.
    await eventually(
      () =>
        bankOf(a.dbPath, gid).state === 'committed by timeout' &&
        bankOf(b.dbPath, gid).state === 'committed by timeout',
      30_000,
    )
    expect((await viewer.get(gid))?.status).toBe('prepared')

    // A coordinator comes back, recovers the transaction and agrees: commit. No effect twice.
    const { tc } = coordinator(true)
    const done = await eventually(async () => {
      const tx = await tc.get(gid)
      return tx?.status === 'succeeded' && tx
    }, 30_000)
    for (const p of [a, b]) {
      expect(bankOf(p.dbPath, gid).effects).toEqual(['preCommit', 'doCommit by timeout'])
      expect(bankOf(p.dbPath, gid).pending).toBe(0)
    }
    expect(bankOf(a.dbPath, gid).bal + bankOf(b.dbPath, gid).bal).toBe(200)
    expect(bankOf(a.dbPath, gid).bal).toBe(70)
    const doCommits = done.branches.filter((br) => br.op === 'doCommit').map((br) => br.result)
    expect(doCommits).toEqual([
      { state: 'committed', decidedBy: 'timeout' },
      { state: 'committed', decidedBy: 'timeout' },
    ])
    expect(done.history.some((h) => h.type === 'heuristic-mixed')).toBe(false)
  }, 90_000)

  it('contrast: the same crash in TCC (2PC-like) leaves the participants blocked, in doubt, until a coordinator returns', async () => {
    const tccGid = 'c3-tcc-blocked'
    // Every try succeeded (resources held on both), then the coordinator dies before logging its decision.
    await crashCoordinator({
      storeUrl,
      kind: 'tcc',
      gid: tccGid,
      urls: { a: a.url, b: b.url },
      crashAt: 'after-log:branch-succeeded b/try#1',
    })
    // The same crash in a 3PC started after it, as the clock: once its participants have given up waiting and
    // committed, the TCC participants have been without a coordinator at least as long.
    const clockGid = 'c3-clock'
    await crashCoordinator({
      storeUrl,
      kind: '3pc',
      gid: clockGid,
      urls: { a: a.url, b: b.url },
      // Right after b's ack: with a branch's success carried by the next write, nothing more is logged yet.
      crashAt: 'after-branch-call b/preCommit#1',
    })
    await eventually(
      () =>
        bankOf(a.dbPath, clockGid).state === 'committed by timeout' &&
        bankOf(b.dbPath, clockGid).state === 'committed by timeout',
      30_000,
    )
    // TCC: still blocked. The amounts stay held on both sides, nothing confirmed or cancelled, no decision logged.
    for (const p of [a, b]) {
      const bank = bankOf(p.dbPath, tccGid, true)
      expect(bank.effects).toEqual(['try'])
      expect(bank.bal).toBe(100)
    }
    expect(bankOf(a.dbPath, tccGid, true).pending).toBe(-30)
    expect(bankOf(b.dbPath, tccGid, true).pending).toBe(30)
    const { tc } = coordinator(true)
    // Only a returning coordinator unblocks them.
    await eventually(async () => (await tc.get(tccGid))?.status === 'succeeded', 30_000)
    for (const p of [a, b]) {
      expect(bankOf(p.dbPath, tccGid, true).effects).toEqual(['try', 'confirm'])
      expect(bankOf(p.dbPath, tccGid, true).pending).toBe(0)
    }
    await eventually(async () => (await tc.get(clockGid))?.status === 'succeeded', 30_000)
  }, 90_000)

  describe('a partition that splits the participants', () => {
    let proxy: PartitionProxy
    afterEach(async () => {
      await proxy?.close()
    })

    it('does not survive: a got preCommit but its ack was cut off, the coordinator aborts, b aborts, a commits on its timeout; the coordinator reports the mixed outcome', async () => {
      const gid = 'c3-partition'
      // a's link: the first preCommit reaches a, then nothing passes either way (its ack is lost).
      proxy = await partitionProxy(a.port, (chunk) => chunk.includes('"op":"preCommit"'))
      // The coordinator gives up on a's ack after 1.5 s; a waits 6 s before acting alone.
      const { threePhase, tc } = coordinator(false, { a: proxy.url, b: b.url }, { a: 1_500 })
      const running = threePhase.run(INPUT, { gid })

      // The coordinator, missing a's ack, decides abort; b (never pre-committed) aborts; a, pre-committed and cut
      // off, hears nothing and commits on its own.
      // What each side and the coordinator hold when a wait below runs out. (It ran out in two whole test runs: the
      // coordinator's preCommit call to a never timed out, because a garbage collection had reclaimed the timeout
      // signal inside `AbortSignal.any`; see http-deadline.test.ts.)
      const stuck = async (error: unknown): Promise<never> => {
        const state = { a: bankOf(a.dbPath, gid), b: bankOf(b.dbPath, gid), tx: await tc.get(gid), cut: proxy.isCut }
        const text = JSON.stringify(state, (_, v) => (typeof v === 'bigint' ? String(v) : v))
        throw new Error(`the partition case did not play out: ${text}`, { cause: error })
      }
      await eventually(() => bankOf(b.dbPath, gid).state === 'aborted', 30_000).catch(stuck)
      await eventually(() => bankOf(a.dbPath, gid).state === 'committed by timeout', 30_000).catch(stuck)
      expect(proxy.isCut).toBe(true)
      const during = await tc.get(gid)
      expect(during?.status).toBe('aborting')
      expect(during?.branches.find((br) => br.id === 'a' && br.op === 'preCommit')?.status).toBe('failed')
      expect(during?.branches.find((br) => br.id === 'b' && br.op === 'preCommit')?.attempts).toBe(0)
      // The inconsistency: a's side of the transfer happened, b's did not. Money is not conserved.
      expect(bankOf(a.dbPath, gid)).toMatchObject({
        bal: 70,
        pending: 0,
        effects: ['preCommit', 'doCommit by timeout'],
      })
      expect(bankOf(b.dbPath, gid)).toMatchObject({ bal: 100, pending: 0, effects: [] })
      expect(bankOf(a.dbPath, gid).bal + bankOf(b.dbPath, gid).bal).toBe(170)

      // The partition heals: a answers the abort with "committed by timeout", and the coordinator says so.
      proxy.heal()
      const result = await running
      expect(result.status).toBe('failed')
      const mixed = result.error?.cause
      expect(mixed).toBeInstanceOf(TxHeuristicError)
      expect(mixed).toMatchObject({ code: 'TX_HEURISTIC_MIXED', committed: ['a'], aborted: ['b'] })
      const after = await tc.get(gid)
      expect(after?.history.map((h) => h.type)).toContain('heuristic-mixed')
      expect(after?.error).toMatch(/mixed \(heuristic\) outcome: a committed while b aborted/)
    }, 90_000)
  })

  it('aborts on a no vote: nothing is pre-committed, no participant holds anything', async () => {
    const gid = 'c3-no-vote'
    const { threePhase, tc } = coordinator(false)
    const result = await threePhase.run({ ...INPUT, refuse: 'b' }, { gid })
    expect(result.status).toBe('failed')
    expect(result.error?.message).toMatch(/canCommit of "b"/)
    expect(bankOf(a.dbPath, gid)).toMatchObject({ bal: 100, pending: 0, effects: [], state: 'aborted' })
    expect(bankOf(b.dbPath, gid)).toMatchObject({ bal: 100, pending: 0, effects: [], state: 'aborted' })
    const tx = await tc.get(gid)
    expect(tx?.history.map((h) => h.type)).not.toContain('pre-commit')
    expect(tx?.branches.filter((br) => br.op === 'preCommit').map((br) => br.attempts)).toEqual([0, 0])
  }, 30_000)

  it('aborts when the participants time out waiting for preCommit (the coordinator died after the votes); the restarted coordinator aborts too', async () => {
    const gid = 'c3-vote-timeout'
    await crashCoordinator({
      storeUrl,
      kind: '3pc',
      gid,
      urls: { a: a.url, b: b.url },
      crashAt: 'after-log:branch-succeeded b/canCommit#1',
    })
    expect(bankOf(a.dbPath, gid).state).toBe('voted')
    await eventually(
      () =>
        bankOf(a.dbPath, gid).state === 'aborted by timeout' && bankOf(b.dbPath, gid).state === 'aborted by timeout',
      30_000,
    )
    const { tc } = coordinator(true)
    const done = await eventually(async () => {
      const tx = await tc.get(gid)
      return tx?.status === 'failed' && tx
    }, 30_000)
    // Its preCommit was refused by a, which had given up: abort everywhere, nothing was ever held.
    expect(done.branches.find((br) => br.id === 'a' && br.op === 'preCommit')?.lastError).toMatch(/aborted/)
    for (const p of [a, b]) expect(bankOf(p.dbPath, gid)).toMatchObject({ bal: 100, pending: 0, effects: [] })
  }, 90_000)
})
