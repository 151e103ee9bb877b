/**
 * The main matrix: every contender (Redis peers and every latchkey backend) on the same scenarios, several
 * runs, the contender order rotated and reversed between runs so that drift on a shared machine hits all alike.
 */

import { type CellFigures, contendedCell, uncontendedCell } from '../lib/cells.js'
import type { ContenderDef } from '../lib/contender-defs.js'
import type { ContenderPools } from '../lib/contender-pools.js'

/** Scenario ids: uncontended at concurrency 1 / 50, contended with W waiters on one key. */
export type ScenarioId = 'c1' | 'c50' | `w${number}`

/** How long and how often. */
export interface MatrixConfig {
  readonly runs: number
  readonly uncontendedMs: number
  readonly contendedMs: number
  /**
   * Contended cells: waiters start max(rampMs, rampPerWaiterMs × W) before the measured window (they queue up first,
   * and each process's code on the wake-up path is compiled by then).
   */
  readonly rampMs: number
  readonly rampPerWaiterMs: number
  /**
   * Before the first run, each contender that waits runs one unrecorded contended cell this long (0: none), so
   * that run 0 does not measure every worker's first use of its code (workers other than worker 0 start the
   * matrix fresh), as runs 1 and 2 do not.
   */
  readonly warmUpMs: number
  readonly concurrency: readonly number[]
  readonly waiters: readonly number[]
  readonly holdMs: number
  readonly thinkMs: number
}

/** Longest a cell may take (open, window, drain, close) before its workers are restarted. */
const CELL_TIMEOUT_MS = 90_000

/** Waiters start this long before the window: enough for W of them to queue up (a znode, a key, a row each). */
export function rampFor(cfg: MatrixConfig, waiters: number): number {
  return Math.max(cfg.rampMs, cfg.rampPerWaiterMs * waiters)
}

/** One cell of one run. */
export interface CellRecord {
  readonly id: string
  readonly scenario: ScenarioId
  readonly run: number
  readonly figures?: CellFigures
  readonly error?: string
  readonly seconds: number
}

/** Scenario ids of a config, in report order. */
export function scenarios(cfg: MatrixConfig): ScenarioId[] {
  return [...cfg.concurrency.map((c) => `c${c}` as ScenarioId), ...cfg.waiters.map((w) => `w${w}` as ScenarioId)]
}

/**
 * The order of run `run`: run 2k is the list rotated by k, run 2k+1 the same order reversed. Each pair of
 * contenders swaps places from an even run to the next, and the contender that opens a block (after a block of
 * another scenario, on workers that sat idle through it) changes from run to run. Rotating by the run and then
 * reversing, as before, opened runs 0 and 1 with the same contender, and never swapped a pair of two.
 */
export function runOrder<T>(items: readonly T[], run: number): T[] {
  const k = items.length === 0 ? 0 : Math.floor(run / 2) % items.length
  const rotated = [...items.slice(k), ...items.slice(0, k)]
  return run % 2 === 1 ? rotated.reverse() : rotated
}

async function cell(
  pools: ContenderPools,
  def: ContenderDef,
  scenario: ScenarioId,
  run: number,
  cfg: MatrixConfig,
  namespace: string,
): Promise<CellRecord> {
  const t0 = performance.now()
  const place = { pool: pools.for(def), namespace, key: `${def.id}:${scenario}:r${run}` }
  const n = Number(scenario.slice(1))
  const waiters = Math.min(n, def.maxWaiters)
  const timing = { holdMs: cfg.holdMs, thinkMs: cfg.thinkMs, rampMs: rampFor(cfg, waiters) }
  try {
    await pools.workers.heal()
    const figures = await withTimeout(
      scenario.startsWith('c')
        ? uncontendedCell(place, def, n, cfg.uncontendedMs)
        : contendedCell(place, def, waiters, cfg.contendedMs, timing),
      CELL_TIMEOUT_MS,
    )
    return { id: def.id, scenario, run, figures, seconds: (performance.now() - t0) / 1000 }
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error)
    // A hung cell leaves workers busy: start fresh ones for the next cell.
    if (message.startsWith('no answer within')) await pools.workers.restart()
    return {
      id: def.id,
      scenario,
      run,
      error: message.split('\n')[0] ?? message,
      seconds: (performance.now() - t0) / 1000,
    }
  }
}

/** Runs every applicable (contender, scenario) cell `cfg.runs` times; `log` gets one line per cell. */
export async function runMatrix(
  pools: ContenderPools,
  defs: readonly ContenderDef[],
  cfg: MatrixConfig,
  namespace: string,
  log: (line: string) => void,
): Promise<CellRecord[]> {
  const records: CellRecord[] = []
  if (cfg.warmUpMs > 0) await warmUp(pools, defs, cfg, namespace, log)
  for (let run = 0; run < cfg.runs; run++) {
    for (const scenario of scenarios(cfg)) {
      const applicable = defs.filter(
        (d) =>
          (d.scenarios === undefined || d.scenarios.includes(scenario)) &&
          (scenario.startsWith('c') || (d.waits && d.maxWaiters > 0)),
      )
      for (const def of runOrder(applicable, run)) {
        const r = await cell(pools, def, scenario, run, cfg, namespace)
        records.push(r)
        const f = r.figures
        const what = f === undefined ? `ERROR ${r.error}` : `${Math.round(f.rate)}/s overlaps ${f.overlaps}`
        log(`run ${run + 1}/${cfg.runs} ${scenario.padEnd(5)} ${def.id.padEnd(18)} ${what} (${r.seconds.toFixed(1)} s)`)
      }
    }
  }
  return records
}

/** One unrecorded contended cell of each waiting contender, on every worker it uses (see `warmUpMs`). */
async function warmUp(
  pools: ContenderPools,
  defs: readonly ContenderDef[],
  cfg: MatrixConfig,
  namespace: string,
  log: (line: string) => void,
): Promise<void> {
  const t0 = performance.now()
  const waiting = defs.filter((d) => d.waits && d.maxWaiters > 0)
  // A 10-waiter cell as run -1, its record dropped: one that fails fails its real cells the same way, which say so.
  const short = { ...cfg, contendedMs: cfg.warmUpMs }
  for (const def of waiting) await cell(pools, def, 'w10', -1, short, namespace)
  log(`warm-up: ${waiting.length} contenders (${((performance.now() - t0) / 1000).toFixed(1)} s)`)
}

/** Opens each contender once in worker 0; returns the ones that answered, and why the others were left out. */
export async function available(
  pools: ContenderPools,
  defs: readonly ContenderDef[],
  namespace: string,
): Promise<{ ok: ContenderDef[]; skipped: { id: string; reason: string }[] }> {
  const ok: ContenderDef[] = []
  const skipped: { id: string; reason: string }[] = []
  for (const def of defs) {
    try {
      // A JVM's first start compiles the Curator program and warms it up: more than a worker's open.
      await withTimeout(pools.for(def).request(0, { op: 'open', spec: def.spec(namespace, 10_000) }), 60_000)
      ok.push(def)
    } catch (error) {
      skipped.push({ id: def.id, reason: error instanceof Error ? error.message : String(error) })
    } finally {
      await withTimeout(pools.for(def).request(0, { op: 'close' }), 20_000).catch(() => undefined)
    }
  }
  return { ok, skipped }
}

function withTimeout<T>(p: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no answer within ${ms / 1000} s`)), ms)
  })
  return Promise.race([p, timeout]).finally(() => clearTimeout(timer))
}
