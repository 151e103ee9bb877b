/**
 * The charts of the report (bench/charts/*.svg), from the same summaries as the tables.
 */
import type { CellFigures } from '../lib/cells.js'
import type { Results } from '../lib/results.js'
import { spread } from '../lib/stats.js'
import { get, type Summaries } from './aggregate.js'
import { barChart } from './svg.js'

type Def = Results['defs'][number]

/** A chart file: name under charts/, title (for the Markdown image) and SVG text. */
export interface ChartFile {
  readonly file: string
  readonly title: string
  readonly svg: string
}

function matrixChart(
  s: Summaries,
  defs: readonly Def[],
  scenarios: readonly string[],
  figure: keyof CellFigures,
  o: { title: string; unit: string; log?: boolean },
): string {
  const series = scenarios.map((sc) => (sc.startsWith('c') ? `concurrency ${sc.slice(1)}` : `${sc.slice(1)} waiters`))
  const values = defs.map((d) => scenarios.map((sc) => get(s, d.id, sc)?.fig[figure]))
  return barChart({ title: o.title, unit: o.unit, rows: defs.map((d) => d.label), series, values, log: o.log ?? false })
}

/** The matrix charts: file, which contenders, which scenarios, which figure, title, unit, log axis. */
type MatrixSpec = [
  string,
  'peers' | 'backends' | 'services',
  'unc' | 'con' | 'services',
  keyof CellFigures,
  string,
  string,
  boolean,
]

const MATRIX_CHARTS: readonly MatrixSpec[] = [
  ['peers-uncontended.svg', 'peers', 'unc', 'rate', 'Redis peers, uncontended: lock+unlock pairs/s', 'pairs/s', false],
  [
    'peers-contended.svg',
    'peers',
    'con',
    'rate',
    'Redis peers, one key, hold 1 ms: acquisitions/s',
    'acquisitions/s',
    false,
  ],
  ['peers-handoff.svg', 'peers', 'con', 'gapP50', 'Redis peers: handoff gap p50 (release → next holder)', 'ms', true],
  [
    'backends-uncontended.svg',
    'backends',
    'unc',
    'rate',
    'Every backend, uncontended: lock+unlock pairs/s',
    'pairs/s',
    true,
  ],
  [
    'backends-contended.svg',
    'backends',
    'con',
    'rate',
    'Every backend, one lock, hold 1 ms: acquisitions/s',
    'acquisitions/s',
    true,
  ],
  [
    'backends-handoff.svg',
    'backends',
    'con',
    'gapP50',
    'Every backend: handoff gap p50 (release → next holder)',
    'ms',
    true,
  ],
  [
    'services.svg',
    'services',
    'services',
    'rate',
    'The usual comparison: MySQL vs Redis (notify / polling) vs ZooKeeper, by contenders',
    'pairs/s (c=1) or acquisitions/s',
    true,
  ],
]

/** The contenders of the usual comparison (docs/background.md#the-usual-comparison-of-lock-services): Redis notified and polling, ZooKeeper, MariaDB. */
const SERVICE_IDS = [
  'redis',
  'redis-poll',
  'redis-semaphore',
  'zk',
  'zk3',
  'mariadb-table',
  'mariadb-get_lock',
  'mariadb-for_update',
]

function flashSaleChart(fs: NonNullable<Results['flashSale']>): ChartFile {
  const rows = fs.backends.flatMap((b) =>
    fs.strategies
      .filter((st) => fs.records.some((x) => x.backend === b.id && x.strategy === st && x.error === undefined))
      .map((st) => ({ b, st })),
  )
  const values = rows.map(({ b, st }) => [
    spread(fs.records.filter((x) => x.backend === b.id && x.strategy === st).map((x) => x.ordersPerSecond)),
  ])
  const svg = barChart({
    title: 'Flash-sale: orders/s by lock backend and strategy (SQLite store)',
    unit: 'orders/s',
    rows: rows.map(({ b, st }) => `${b.label} · ${st}`),
    series: ['orders/s'],
    values,
  })
  return { file: 'flash-sale.svg', title: 'Flash-sale orders/s', svg }
}

/** Every chart. */
export function charts(r: Results, s: Summaries): ChartFile[] {
  const con = r.matrixConfig.waiters.map((w) => `w${w}`)
  const scenariosOf = { unc: r.matrixConfig.concurrency.map((c) => `c${c}`), con, services: ['c1', ...con] }
  const defsOf = (set: MatrixSpec[1], waits: boolean) =>
    set === 'services'
      ? SERVICE_IDS.flatMap((id) => r.defs.filter((d) => d.id === id))
      : r.defs.filter((d) => d.tables.includes(set) && (!waits || d.waits))
  const out = MATRIX_CHARTS.map(([file, set, sc, figure, title, unit, log]) => ({
    file,
    title,
    svg: matrixChart(s, defsOf(set, sc === 'con'), scenariosOf[sc], figure, { title, unit, log }),
  }))
  return r.flashSale === undefined ? out : [...out, flashSaleChart(r.flashSale)]
}
