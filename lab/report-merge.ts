/**
 * What a partial lab run (`--only`) keeps of the previous lab/RESULTS.md. The run histories under lab/results are
 * not tracked, so a report written from the runs of one partial invocation would drop every cell measured before
 * it. Instead the previous report's tables are read back by key (matrix cell by scenario and backend, liveness row
 * by backend, run row by run name, invocation lines, the naive-algorithm verdicts) and the runs at hand replace
 * only what they measured.
 */

/** The parts of a report that can be merged, keyed. */
export interface ReportTables {
  /** Matrix rows by scenario id (`T1`, `T18`...): the row label and the cell text by backend. */
  matrix: Map<string, { label: string; cells: Map<string, string> }>
  /** Liveness rows by backend: the cells after the backend column. */
  liveness: Map<string, string[]>
  /** Rows of the runs table by run name (the whole Markdown row). */
  runs: Map<string, string>
  /** The invocation lines of the note (`- \`npm run lab ...\``). */
  invocations: string[]
  /** The body of the naive-algorithm section. */
  naive: string
}

const cellsOf = (row: string): string[] =>
  row
    .trim()
    .replace(/^\|/, '')
    .replace(/\|$/, '')
    .split(' | ')
    .map((c) => c.trim())

/** The table starting at the line that begins with `header`, as rows of cells (header and separator left out). */
function table(lines: string[], header: string): { columns: string[]; rows: string[][]; raw: string[] } {
  const start = lines.findIndex((l) => l.startsWith(header))
  if (start < 0) return { columns: [], rows: [], raw: [] }
  const raw: string[] = []
  for (let i = start + 2; i < lines.length && lines[i]!.startsWith('|'); i++) raw.push(lines[i]!)
  return { columns: cellsOf(lines[start]!), rows: raw.map(cellsOf), raw }
}

/** The text between the heading `## title` and the next `## ` heading. */
function section(lines: string[], title: string): string {
  const start = lines.indexOf(`## ${title}`)
  if (start < 0) return ''
  const end = lines.findIndex((l, i) => i > start && l.startsWith('## '))
  return lines
    .slice(start + 1, end < 0 ? undefined : end)
    .join('\n')
    .trim()
}

/** Reads the mergeable tables of a report written by report.ts (empty tables for a missing or foreign text). */
export function parseReport(text: string): ReportTables {
  const lines = text.split('\n')
  const matrix: ReportTables['matrix'] = new Map()
  const m = table(lines, '| scenario |')
  const backends = m.columns.slice(1)
  for (const row of m.rows) {
    const label = row[0] ?? ''
    const id = label.split(' ')[0] ?? ''
    matrix.set(id, { label, cells: new Map(backends.map((b, i) => [b, row[i + 1] ?? '–'])) })
  }
  const liveness = new Map(table(lines, '| backend |').rows.map((row) => [row[0] ?? '', row.slice(1)]))
  const runsTable = table(lines, '| run |')
  const runs = new Map(
    runsTable.rows.map((row, i) => [/^\[?([^\]]+)\]?/.exec(row[0] ?? '')?.[1] ?? '', runsTable.raw[i]!]),
  )
  const invocations = lines.filter((l) => l.startsWith('- `npm run lab'))
  return { matrix, liveness, runs, invocations, naive: section(lines, 'The naive algorithms') }
}

/** A latchkey run's name: `<scenario>-<backend>-fence-<on|off>-s<seed>`. */
const RUN_NAME = /^[A-Za-z0-9]+-(.+)-fence-(on|off)-s\d+$/

/**
 * The per-backend counts of the runs table: lost updates with fencing off and on (column 5) and token
 * regressions (column 8; a row written before that column existed counts 0, see `withRegressions`).
 */
function countsFromRuns(runs: Map<string, string>): Map<string, { off: number; on: number; regressions: number }> {
  const counts = new Map<string, { off: number; on: number; regressions: number }>()
  for (const [name, row] of runs) {
    const match = RUN_NAME.exec(name)
    if (match === null) continue
    const cells = cellsOf(row)
    const c = counts.get(match[1]!) ?? { off: 0, on: 0, regressions: 0 }
    const lost = Number(cells[4] ?? 0)
    if (match[2] === 'on') c.on += lost
    else c.off += lost
    c.regressions += Number(cells[7] ?? 0) || 0
    counts.set(match[1]!, c)
  }
  return counts
}

/**
 * Adds the token-regression column to a runs-table row written before it existed. The report it comes from
 * counted 0 regressions for the row's backend, and counts are never negative, so the row's own count was 0;
 * otherwise it is unknown.
 */
function withRegressions(name: string, row: string, liveness: Map<string, string[]>): string {
  if (cellsOf(row).length >= 8) return row
  const backend = RUN_NAME.exec(name)?.[1]
  const total = backend === undefined ? '0' : (liveness.get(backend)?.[3] ?? '?')
  return `${row} ${total === '0' ? '0' : '?'} |`
}

/**
 * A liveness row for a backend measured both before and now. Lost updates and token regressions are summed from
 * the merged runs table, so a run merged twice counts once; maxima are maxima; the median of the per-run
 * unavailability p50s cannot be recomputed without the earlier runs, so the earlier one is kept.
 */
export function mergeLiveness(
  before: string[],
  now: string[],
  counts: { off: number; on: number; regressions: number } | undefined,
): string[] {
  const [unavBefore = '', lagBefore = '', lostBefore = '', regBefore = ''] = before
  const [unavNow = '', lagNow = '', lostNow = '', regNow = ''] = now
  const [p50Before, maxBefore] = unavBefore.split(' / ').map(Number)
  const [, maxNow] = unavNow.split(' / ').map(Number)
  const lag = [lagBefore, lagNow].filter((v) => v !== '–').map(Number)
  return [
    `${p50Before} / ${Math.max(maxBefore ?? 0, maxNow ?? 0)}`,
    lag.length === 0 ? '–' : String(Math.max(...lag)),
    counts === undefined ? lostNow || lostBefore : `${counts.off} / ${counts.on}`,
    counts === undefined ? regNow || regBefore : String(counts.regressions),
  ]
}

/** `now`'s tables over `before`'s: a cell, row or line of `before` stays unless `now` has one with its key. */
export function mergeTables(before: ReportTables, now: ReportTables, scenarioOrder: string[]): ReportTables {
  const order = (id: string): number => {
    const i = scenarioOrder.indexOf(id)
    return i < 0 ? scenarioOrder.length : i
  }
  const ids = [...new Set([...before.matrix.keys(), ...now.matrix.keys()])].sort((a, b) => order(a) - order(b))
  const matrix: ReportTables['matrix'] = new Map()
  for (const id of ids) {
    const was = before.matrix.get(id)
    const is = now.matrix.get(id)
    const cells = new Map(was?.cells)
    for (const [backend, text] of is?.cells ?? []) if (text !== '–' || !cells.has(backend)) cells.set(backend, text)
    matrix.set(id, { label: is?.label ?? was?.label ?? id, cells })
  }
  const runs = new Map([...before.runs].map(([name, row]) => [name, withRegressions(name, row, before.liveness)]))
  for (const [name, row] of now.runs) runs.set(name, row)
  const counts = countsFromRuns(runs)
  const liveness = new Map(before.liveness)
  for (const [backend, row] of now.liveness) {
    const was = liveness.get(backend)
    liveness.set(backend, was === undefined ? row : mergeLiveness(was, row, counts.get(backend)))
  }
  const invocations = [...before.invocations, ...now.invocations.filter((l) => !before.invocations.includes(l))]
  return {
    matrix,
    liveness,
    runs: new Map([...runs].sort(([a], [b]) => a.localeCompare(b))),
    invocations,
    naive: now.naive.includes('not run.') && before.naive !== '' ? before.naive : now.naive,
  }
}

/** The matrix and liveness tables of `tables` as Markdown. */
export function renderMatrix(tables: ReportTables): string {
  const backends = [...new Set([...tables.matrix.values()].flatMap((r) => [...r.cells.keys()]))].sort()
  return [
    `| scenario | ${backends.join(' | ')} |`,
    `| --- | ${backends.map(() => '---').join(' | ')} |`,
    ...[...tables.matrix.values()].map(
      (r) => `| ${r.label} | ${backends.map((b) => r.cells.get(b) ?? '–').join(' | ')} |`,
    ),
    '',
    '| backend | unavailable p50 / max (ms) | loss-signal lag after a successor, max (ms) | lost updates, fencing off / on | token regressions |',
    '| --- | --- | --- | --- | --- |',
    ...[...tables.liveness]
      .sort(([a], [b]) => a.localeCompare(b))
      .map(([backend, cells]) => `| ${backend} | ${cells.join(' | ')} |`),
  ].join('\n')
}
