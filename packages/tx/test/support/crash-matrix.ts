/**
 * The crash-at-every-step matrix: each scenario of `matrix-saga.ts` is first run uninterrupted in a child
 * process that lists every crash point it passes (`LATCHKEY_TX_CRASH_AT=trace`); each point becomes one case,
 * so a crash point added to the coordinator is covered without editing a test. A case runs the scenario in a
 * fresh process that SIGKILLs itself at that point; a freshly started coordinator recovers and finishes it.
 */
import { join } from 'node:path'
import { expect } from 'vitest'
import { createCoordinator } from '../../src/index.js'
import { createLedger, ledgerCounts } from './crash-saga.js'
import { tempDir } from './databases.js'
import { eventually } from './eventually.js'
import { crashAtPoint, tracePoints } from './matrix-process.js'
import { defineMatrix, MATRIX_RETRY, type MatrixScenario, SCENARIOS } from './matrix-saga.js'

/** One crash point of one scenario. */
export interface CrashCase {
  readonly title: string
  readonly scenario: MatrixScenario
  readonly key: string
  /** The crash point that followed `key` in the uninterrupted run, if any. */
  readonly next: string | undefined
  /** Invocations per `step:op` in the uninterrupted run. */
  readonly traceCalls: Readonly<Record<string, number>>
}

/** The traced scenarios: every case, and the ledger (in a temporary directory) the cases share. */
export interface TracedMatrix {
  readonly dir: string
  readonly ledgerPath: string
  readonly cases: readonly CrashCase[]
  readonly remove: () => void
}

/** Runs every scenario once uninterrupted (in parallel, on a temporary SQLite log) and lists the cases. */
export async function traceMatrix(): Promise<TracedMatrix> {
  const tmp = tempDir()
  const ledgerPath = join(tmp.dir, 'ledger.db')
  await createLedger(ledgerPath)
  const storeUrl = `sqlite:${join(tmp.dir, 'trace.db')}`
  const traces = await Promise.all(
    SCENARIOS.map((s) => tracePoints({ storeUrl, ledgerPath, scenario: s.name, gid: `trace-${s.name}` })),
  )
  const cases = SCENARIOS.flatMap((scenario, i) => {
    const { effects, calls } = ledgerCounts(ledgerPath, `trace-${scenario.name}`)
    // An uninterrupted run is the reference: it must itself reach the scenario's outcome.
    expect(effects, scenario.name).toEqual(Object.fromEntries(scenario.effects.map((e) => [e, 1])))
    const keys = traces[i] ?? []
    return keys.map((key, j) => ({
      title: `${scenario.name} @ ${key}`,
      scenario,
      key,
      next: keys[j + 1],
      traceCalls: calls,
    }))
  })
  return { dir: tmp.dir, ledgerPath, cases, remove: tmp.remove }
}

/** The `step:op` whose call was cut short by a crash at `key` (its outcome not logged yet), if any. */
function cutShort(key: string): string | undefined {
  const m = /^(?:after-log:branch-running|after-branch-call) (\w+)\/(\w+)#\d+$/.exec(key)
  return m === null ? undefined : `${m[1]}:${m[2]}`
}

/**
 * A transaction's create and a branch's success are written with the transaction's next write: when that write
 * marked the next operation running, a crash at their points (`after-log:created`, `after-log:branch-succeeded`)
 * also cuts that operation short, exactly as a crash at its own `after-log:branch-running` point does.
 */
function cutShortBy(c: CrashCase): string | undefined {
  const merged = /^after-log:(created|branch-succeeded)/.test(c.key) && c.next?.startsWith('after-log:branch-running')
  return cutShort(c.key) ?? (merged ? cutShort(c.next ?? '') : undefined)
}

/**
 * Crashes the scenario at the case's point (its own ledger in `dir`, its own log at `storeUrl`), then starts a
 * fresh coordinator on that log, which recovers the transaction, and checks the invariants: the scenario's
 * final status (a parked one keeps its reason), every effect applied exactly once (so no compensation twice,
 * nothing both confirmed and cancelled), and no operation whose success was logged called again: only the one
 * cut short may be called once more (or once less: a retry the crash pre-empted).
 */
export async function checkCrashCase(
  c: CrashCase,
  storeUrl: string,
  dir: string,
  gid: string,
  /** The dying process's lease: long enough not to lose it before the crash point on a loaded machine. */
  leaseTtlMs = 1_000,
): Promise<void> {
  const ledgerPath = join(dir, `ledger-${gid}.db`)
  await createLedger(ledgerPath)
  await crashAtPoint({ storeUrl, ledgerPath, scenario: c.scenario.name, gid, leaseTtlMs }, c.key)
  const tc = createCoordinator({ store: storeUrl, recoverEveryMs: 100, retry: MATRIX_RETRY })
  const { close } = defineMatrix(tc, ledgerPath)
  try {
    const done = await eventually(async () => {
      const tx = await tc.get(gid)
      return tx?.status === c.scenario.status && tx
    }, 20_000)
    if (done.status === 'parked') expect(done.error).toMatch(/unavailable/)
    const { effects, calls } = ledgerCounts(ledgerPath, gid)
    expect(effects).toEqual(Object.fromEntries(c.scenario.effects.map((e) => [e, 1])))
    const short = cutShortBy(c)
    for (const op of new Set([...Object.keys(calls), ...Object.keys(c.traceCalls)])) {
      const diff = (calls[op] ?? 0) - (c.traceCalls[op] ?? 0)
      if (op === short) expect(Math.abs(diff), op).toBeLessThanOrEqual(1)
      else expect(diff, `${op} called ${calls[op] ?? 0} times`).toBe(0)
    }
    // Whoever finished it wrote with a higher token than the process that died (unless that one had finished).
    const tokens = done.history.map((e) => e.token)
    expect([...tokens].sort((x, y) => (x < y ? -1 : x > y ? 1 : 0))).toEqual(tokens)
  } finally {
    await tc.close()
    close()
  }
}
