/**
 * Cells of all runs folded into one summary per (contender, scenario): each figure's median and min–max.
 */
import type { CellFigures } from '../lib/cells.js'
import { type Spread, spread } from '../lib/stats.js'
import type { CellRecord } from '../sections/matrix.js'

/** The figures of a (contender, scenario) over its runs. */
export interface Summary {
  readonly runs: number
  readonly errors: readonly string[]
  /** Waiters actually run (scaled down when below the scenario's count) and processes used. */
  readonly waiters: number
  readonly processes: number
  readonly fig: Readonly<Record<keyof CellFigures, Spread>>
  /** Overlaps summed over the runs (must be 0). */
  readonly overlapsTotal: number
}

/** Summaries keyed `${id}/${scenario}`. */
export type Summaries = ReadonlyMap<string, Summary>

const FIELDS: readonly (keyof CellFigures)[] = [
  'ops',
  'rate',
  'cpuPer1k',
  'cmdsPerOp',
  'clientCmdsPerOp',
  'serverCpuPer1k',
  'latP50',
  'latP99',
  'gapP50',
  'gapP99',
  'overlaps',
  'fairness',
  'starved',
  'giveUps',
  'waiters',
  'processes',
]

/** Folds the records. */
export function summarise(cells: readonly CellRecord[]): Summaries {
  const groups = new Map<string, CellRecord[]>()
  for (const c of cells) {
    const k = `${c.id}/${c.scenario}`
    groups.set(k, [...(groups.get(k) ?? []), c])
  }
  const out = new Map<string, Summary>()
  for (const [k, group] of groups) {
    const ok = group.flatMap((c) => (c.figures === undefined ? [] : [c.figures]))
    const fig = Object.fromEntries(FIELDS.map((f) => [f, spread(ok.map((x) => x[f]))])) as Record<
      keyof CellFigures,
      Spread
    >
    out.set(k, {
      runs: ok.length,
      errors: group.flatMap((c) => (c.error === undefined ? [] : [c.error])),
      waiters: ok[0]?.waiters ?? Number.NaN,
      processes: ok[0]?.processes ?? Number.NaN,
      fig,
      overlapsTotal: ok.reduce((s, x) => s + (Number.isFinite(x.overlaps) ? x.overlaps : 0), 0),
    })
  }
  return out
}

/** The summary of one cell, if it ran. */
export function get(s: Summaries, id: string, scenario: string): Summary | undefined {
  const x = s.get(`${id}/${scenario}`)
  return x !== undefined && x.runs > 0 ? x : undefined
}

/** The median of one figure, NaN when the cell did not run. */
export function med(s: Summaries, id: string, scenario: string, f: keyof CellFigures): number {
  return get(s, id, scenario)?.fig[f].median ?? Number.NaN
}
