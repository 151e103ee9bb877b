/**
 * A coordinator process is killed with SIGKILL in the middle of a saga; a fresh coordinator (another process's
 * view: its own store handle and lock backend on the same SQLite file) finishes the transaction under a new
 * lease. Every step's effect is applied exactly once and no compensation twice, although the operation that
 * was cut short is called again.
 */
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { type Coordinator, createCoordinator, type TxEvent } from '../src/index.js'
import { kill, runUntilCrashPoint } from './support/crash-process.js'
import { CRASH_SAGA, createLedger, defineCrashSaga, ledgerCounts } from './support/crash-saga.js'
import { tempDir } from './support/databases.js'
import { eventually } from './support/eventually.js'

const tmp = tempDir()
const storeUrl = `sqlite:${join(tmp.dir, 'tx.db')}`
const ledgerPath = join(tmp.dir, 'ledger.db')

beforeAll(async () => {
  await createLedger(ledgerPath)
})
afterAll(() => {
  tmp.remove()
})

const crash = (crashAt: string, gid: string, failAt: string, kind: 'saga' | 'tcc' = 'saga') =>
  runUntilCrashPoint({ storeUrl, ledgerPath, crashAt, gid, failAt, kind })

describe('recovery after SIGKILL', () => {
  let tc: Coordinator
  const events: TxEvent[] = []
  let close: () => void

  beforeAll(() => {
    tc = createCoordinator({
      store: storeUrl,
      recoverEveryMs: 100,
      retry: { firstMs: 5, maxMs: 20 },
      onEvent: (e) => events.push(e),
    })
    close = defineCrashSaga(tc, ledgerPath).close
  })
  afterAll(async () => {
    await tc?.close()
    close?.()
  })

  it('killed after a forward step committed its effect: resumed, each step applied exactly once', async () => {
    const gid = 'crash-forward'
    const child = await crash('b:action', gid, '-')
    await kill(child)
    const done = await eventually(async () => {
      const tx = await tc.get(gid)
      return tx?.status === 'succeeded' && tx
    }, 20_000)
    const { effects, calls } = ledgerCounts(ledgerPath, gid)
    expect(effects).toEqual({ 'a:action': 1, 'b:action': 1, 'c:action': 1 })
    expect(calls).toEqual({ 'a:action': 1, 'b:action': 2, 'c:action': 1 })
    expect(done.name).toBe(CRASH_SAGA)
    expect(done.branches.find((b) => b.id === 'b' && b.op === 'action')?.attempts).toBe(2)
    const recovered = done.history.find((e) => e.type === 'recovered')
    const created = done.history.find((e) => e.type === 'created')
    expect(recovered?.token).toBeGreaterThan(created?.token ?? 0n)
    expect(events.some((e) => e.type === 'recovered' && e.gid === gid)).toBe(true)
  })

  it('killed during compensation: compensations resume, none is applied twice', async () => {
    const gid = 'crash-compensate'
    const child = await crash('b:compensate', gid, 'c')
    await kill(child)
    const done = await eventually(async () => {
      const tx = await tc.get(gid)
      return tx?.status === 'failed' && tx
    }, 20_000)
    const { effects, calls } = ledgerCounts(ledgerPath, gid)
    // c's action failed before its effect, so its compensation is a null compensation (no effect).
    expect(effects).toEqual({ 'a:action': 1, 'b:action': 1, 'b:compensate': 1, 'a:compensate': 1 })
    expect(calls).toEqual({
      'a:action': 1,
      'b:action': 1,
      'c:action': 1,
      'c:compensate': 1,
      'b:compensate': 2,
      'a:compensate': 1,
    })
    expect(done.error).toBe('c refused')
  })

  it('TCC killed while confirming, after the decision: recovery confirms the rest, never cancels', async () => {
    const gid = 'crash-tcc-confirm'
    const child = await crash('x:confirm', gid, '-', 'tcc')
    await kill(child)
    const done = await eventually(async () => {
      const tx = await tc.get(gid)
      return tx?.status === 'succeeded' && tx
    }, 20_000)
    const { effects, calls } = ledgerCounts(ledgerPath, gid)
    expect(effects).toEqual({ 'x:try': 1, 'y:try': 1, 'x:confirm': 1, 'y:confirm': 1 })
    expect(calls).toEqual({ 'x:try': 1, 'y:try': 1, 'x:confirm': 2, 'y:confirm': 1 })
    expect(done.kind).toBe('tcc')
  })

  it('TCC killed after a cancel applied (a try failed): recovery finishes, that cancel is not applied twice', async () => {
    const gid = 'crash-tcc-cancel'
    const child = await crash('x:cancel', gid, 'y', 'tcc')
    await kill(child)
    await eventually(async () => (await tc.get(gid))?.status === 'failed', 20_000)
    const { effects, calls } = ledgerCounts(ledgerPath, gid)
    // y's try failed before its effect: its cancel is a null compensation; x's try is undone once.
    expect(effects).toEqual({ 'x:try': 1, 'x:cancel': 1 })
    expect(calls).toEqual({ 'x:try': 1, 'y:try': 1, 'y:cancel': 1, 'x:cancel': 2 })
  })

  const ALL = { 'a:action': 1, 'b:action': 1, 'c:action': 1 }
  const UNDONE = { 'a:action': 1, 'b:action': 1, 'a:compensate': 1, 'b:compensate': 1 }
  it.each([
    ['before the first effect', 'a:action:before', '-', 'succeeded', ALL, 'a:action'],
    ['after the last effect, before the outcome is written', 'c:action', '-', 'succeeded', ALL, 'c:action'],
    ['before a compensation applied', 'b:compensate:before', 'c', 'failed', UNDONE, 'b:compensate'],
    [
      'after the last compensation, before the outcome is written',
      'a:compensate',
      'c',
      'failed',
      UNDONE,
      'a:compensate',
    ],
  ])('saga killed %s: finished once, every effect once', async (_, crashAt, failAt, status, effects, twice) => {
    const gid = `crash-${crashAt.replaceAll(':', '-')}`
    const child = await crash(crashAt, gid, failAt)
    await kill(child)
    await eventually(async () => (await tc.get(gid))?.status === status, 20_000)
    const counts = ledgerCounts(ledgerPath, gid)
    expect(counts.effects).toEqual(effects)
    // The operation cut short is called again; every other one once.
    expect(counts.calls[twice]).toBe(2)
    expect(Object.entries(counts.calls).filter(([k, v]) => k !== twice && v !== 1)).toEqual([])
  })
})
