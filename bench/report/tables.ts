/**
 * Markdown tables of the matrix: one per scenario (every figure), and compact side-by-side summaries.
 */
import type { CellFigures } from '../lib/cells.js'
import { fmt, fmtAuto, fmtSpread, type Spread, spread } from '../lib/stats.js'
import type { CellRecord } from '../sections/matrix.js'
import { get, type Summaries } from './aggregate.js'

/** A contender as the report names it. */
export interface Row {
  readonly id: string
  readonly label: string
}

/** A Markdown table. */
export function table(head: readonly string[], rows: readonly (readonly string[])[]): string {
  const line = (cells: readonly string[]) => `| ${cells.join(' | ')} |`
  return [line(head), line(head.map(() => '---')), ...rows.map(line)].join('\n')
}

/** Per-run ratio of `id`'s figure `f` (default the rate) to `base`'s in the same run, over the runs. */
export function sameRunRatio(
  cells: readonly CellRecord[],
  id: string,
  base: string,
  scenario: string,
  f: keyof CellFigures = 'rate',
): Spread {
  const at = (who: string, run: number) =>
    cells.find((c) => c.id === who && c.scenario === scenario && c.run === run)?.figures?.[f]
  const runs = [...new Set(cells.map((c) => c.run))]
  return spread(runs.map((r) => (at(id, r) ?? Number.NaN) / (at(base, r) ?? Number.NaN)))
}

/** A run-by-run ratio as the report prints it: `1.23× [1.01×–1.40×]`, ∞ where the other contender made none. */
export const ratioText = (x: Spread): string => fmtSpread(x, (n) => (Number.isFinite(n) ? `${n.toFixed(2)}×` : '∞'))

const cell = (s: Spread) => fmtSpread(s)
const cmds = (f: Readonly<Record<keyof CellFigures, Spread>>) =>
  `${fmtAuto(f.clientCmdsPerOp.median)} / ${fmtAuto(f.cmdsPerOp.median)}`
const pair = (a: Spread, b: Spread) => `${fmtAuto(a.median)} / ${fmtAuto(b.median)}`

function failed(r: Row, s: Summaries, scenario: string, width: number): string[] | undefined {
  const x = s.get(`${r.id}/${scenario}`)
  if (x === undefined) return undefined
  if (x.runs > 0) return undefined
  return [r.label, `failed: ${x.errors[0] ?? 'no result'}`, ...Array<string>(width - 2).fill('')]
}

/** Uncontended scenario: pairs/s, ratio to `base` in the same run, latency, commands, CPU. */
export function uncontendedTable(
  rows: readonly Row[],
  s: Summaries,
  cells: readonly CellRecord[],
  scenario: string,
  base: string,
) {
  const head = [
    'library / backend',
    'lock+unlock pairs/s',
    `× ${base} (same run)`,
    'acquire p50 / p99 ms',
    'client / server cmds per pair',
    'client CPU ms/1k pairs',
    'Redis CPU ms/1k',
  ]
  const body = rows.flatMap((r) => {
    const f = get(s, r.id, scenario)?.fig
    if (f === undefined) return [failed(r, s, scenario, head.length) ?? []].filter((x) => x.length > 0)
    return [
      [
        r.label,
        cell(f.rate),
        cell(sameRunRatio(cells, r.id, base, scenario)),
        pair(f.latP50, f.latP99),
        cmds(f),
        cell(f.cpuPer1k),
        fmtAuto(f.serverCpuPer1k.median),
      ],
    ]
  })
  return table(head, body)
}

/** Contended scenario: every figure, with the waiters actually run. */
export function contendedTable(
  rows: readonly Row[],
  s: Summaries,
  cells: readonly CellRecord[],
  scenario: string,
  base: string,
) {
  const head = [
    'library / backend',
    'waiters × processes',
    'acq/s',
    `× ${base} (same run)`,
    'handoff gap p50 / p99 ms',
    'client / server cmds per acq',
    'client CPU ms/1k acq',
    'fairness max/min',
    'starved',
    'give-ups',
    'overlaps',
  ]
  const body = rows.flatMap((r) => {
    const x = get(s, r.id, scenario)
    if (x === undefined) return [failed(r, s, scenario, head.length) ?? []].filter((y) => y.length > 0)
    const f = x.fig
    return [
      [
        r.label,
        `${fmt(x.waiters)} × ${x.processes}`,
        cell(f.rate),
        cell(sameRunRatio(cells, r.id, base, scenario)),
        `${cell(f.gapP50)} / ${cell(f.gapP99)}`,
        cmds(f),
        cell(f.cpuPer1k),
        fmtSpread(f.fairness),
        fmt(f.starved.median),
        fmt(f.giveUps.median),
        String(x.overlapsTotal),
      ],
    ]
  })
  return table(head, body)
}

/** One figure of every row in every scenario: a compact side-by-side table. */
export function sideBySide(
  rows: readonly Row[],
  s: Summaries,
  scenarios: readonly string[],
  figure: keyof CellFigures,
  show: (f: Readonly<Record<keyof CellFigures, Spread>>) => string = (f) => cell(f[figure]),
) {
  const head = [
    'backend',
    ...scenarios.map((sc) => (sc.startsWith('c') ? `uncontended c=${sc.slice(1)}` : `W=${sc.slice(1)}`)),
  ]
  const body = rows.map((r) => [
    r.label,
    ...scenarios.map((sc) => {
      const x = get(s, r.id, sc)
      if (x === undefined) return s.has(`${r.id}/${sc}`) ? 'failed' : '–'
      const scaled = sc.startsWith('w') && x.waiters !== Number(sc.slice(1)) ? ` (W=${fmt(x.waiters)})` : ''
      return `${show(x.fig)}${scaled}`
    }),
  ])
  return table(head, body)
}
