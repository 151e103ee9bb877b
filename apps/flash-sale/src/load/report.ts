import type { PaymentsSummary } from '../payments/payments-checks.js'
import type { InvariantCheck } from './invariants.js'
import { type LoadResult, quantile } from './run-load.js'

/** One line of the comparison table. */
export interface ResultRow {
  readonly label: string
  readonly result: LoadResult
  readonly checks: readonly InvariantCheck[]
  /** Units sold beyond the initial stock (from the checks' audit). */
  readonly oversold: number
  /** A paid sale's outcome (`--payments`). */
  readonly payments?: PaymentsSummary
}

const COLUMNS = [
  'strategy',
  'sold',
  'sold out',
  'dup refused',
  'oversold',
  '503 retried',
  'failed',
  'orders/s',
  'p50 ms',
  'p99 ms',
  'max ms',
  'sold in s',
  'time s',
] as const

function cells(row: ResultRow): string[] {
  const { counts, latencies, elapsedMs } = row.result
  return [
    row.label,
    // A paid sale's orders are the paid ones, whether the buyer heard 201 or 202 (settled after the answer).
    String(row.payments?.paid ?? counts.ordered + counts.recovered),
    String(counts.soldOut),
    String(counts.duplicates),
    String(row.oversold),
    String(counts.busy),
    String(counts.failed),
    String(Math.round((latencies.length / elapsedMs) * 1000)),
    quantile(latencies, 0.5).toFixed(1),
    quantile(latencies, 0.99).toFixed(1),
    quantile(latencies, 1).toFixed(1),
    (row.result.soldInMs / 1000).toFixed(1),
    (elapsedMs / 1000).toFixed(1),
  ]
}

/**
 * Formats the results as a Markdown table (readable in a terminal and pasteable into notes).
 *
 * @example
 * console.log(formatTable([{ label: 'lock', result, checks, oversold: 0 }]))
 */
export function formatTable(rows: readonly ResultRow[]): string {
  const body = rows.map(cells)
  const widths = COLUMNS.map((c, i) => Math.max(c.length, ...body.map((r) => (r[i] ?? '').length)))
  const line = (values: readonly string[]): string =>
    `| ${values.map((v, i) => (i === 0 ? v.padEnd(widths[i] ?? 0) : v.padStart(widths[i] ?? 0))).join(' | ')} |`
  // Markdown alignment row: text left, numbers right.
  const rule = `|${widths.map((w, i) => (i === 0 ? '-'.repeat(w + 2) : `${'-'.repeat(w + 1)}:`)).join('|')}|`
  return [line(COLUMNS), rule, ...body.map(line)].join('\n')
}

/** Formats the invariant checks of each row, one line per check. */
export function formatChecks(rows: readonly ResultRow[]): string {
  return rows
    .flatMap((row) =>
      row.checks.map((c) => `${c.ok ? 'PASS' : 'FAIL'}  ${row.label.padEnd(10)} ${c.name.padEnd(40)} ${c.detail}`),
    )
    .join('\n')
}

/** A one-line progress bar for a TTY (carriage return, no newline). */
export function progressLine(label: string, done: number, total: number, startedMs: number): string {
  const width = 30
  const filled = Math.round((done / Math.max(1, total)) * width)
  const seconds = ((performance.now() - startedMs) / 1000).toFixed(1)
  return `\r${label.padEnd(10)} [${'#'.repeat(filled)}${'.'.repeat(width - filled)}] ${done}/${total} buyers ${seconds}s`
}
