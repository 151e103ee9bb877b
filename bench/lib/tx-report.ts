/** The printed tables of the latchkey-tx benchmark (markdown). */
import { fmt } from './stats.js'
import type { DbKind } from './tx-participant.js'
import type { Protocol } from './tx-workload.js'

/** One measured cell. */
export interface Row {
  readonly db: DbKind
  readonly c: number
  readonly protocol: Protocol
  readonly label: string
  readonly tps: number
  readonly p50: number
  readonly p99: number
  /** TPS over the no-coordinator baseline's TPS of the same database, concurrency and protocol. */
  readonly ratio: number
  readonly errors: number
  readonly firstError: unknown
}

const ms = (n: number) => (Number.isFinite(n) ? n.toFixed(n < 10 ? 2 : 1) : 'n/a')

/** The main table: one line per cell, with its ratio to the baseline. */
export function printTable(rows: readonly Row[]): void {
  console.log(
    '| log / participant db | concurrency | protocol | branches | global TPS | p50 ms | p99 ms | x baseline |',
  )
  console.log('| --- | ---: | --- | --- | ---: | ---: | ---: | ---: |')
  for (const r of rows) {
    const errors = r.errors > 0 ? ` (${r.errors} errors)` : ''
    console.log(
      `| ${r.db} | ${r.c} | ${r.protocol} | ${r.label} | ${fmt(r.tps)}${errors} | ${ms(r.p50)} | ${ms(r.p99)} | ` +
        `${r.label === 'no coordinator' ? '1 (baseline)' : `${r.ratio.toFixed(2)}x`} |`,
    )
  }
  for (const r of rows) {
    if (r.firstError !== undefined) console.log(`\n${r.db} c=${r.c} ${r.protocol} ${r.label}: ${String(r.firstError)}`)
  }
}

/** A profiled cell: the log pool's statements during that cell. */
export interface Profile {
  readonly db: DbKind
  readonly c: number
  readonly protocol: Protocol
  readonly label: string
  readonly log: { count: Record<string, number>; ms: Record<string, number> }
  /** Global transactions finished in the cell. */
  readonly tx: number
}

const KINDS = ['checkout', 'begin/commit', 'log-write', 'log-read', 'lease']

/**
 * Where a global transaction's time goes on the log's pool: statements per global transaction by kind, and the
 * time spent waiting for them per global transaction (the statements of one transaction are sequential, so this
 * is its latency spent on the log; the rest is the branches and the coordinator's own code).
 */
export function printProfile(profiles: readonly Profile[]): void {
  if (profiles.length === 0) return
  console.log('\nLog pool per global transaction: statements (ms waited) by kind')
  console.log(`\n| db | c | protocol | branches | ${KINDS.join(' | ')} | total |`)
  console.log(`| --- | ---: | --- | --- | ${KINDS.map(() => '---:').join(' | ')} | ---: |`)
  for (const p of profiles) {
    const per = (n: number | undefined) => (n ?? 0) / Math.max(1, p.tx)
    const cells = KINDS.map((k) => `${per(p.log.count[k]).toFixed(1)} (${per(p.log.ms[k]).toFixed(2)})`)
    const totalCount = Object.values(p.log.count).reduce((a, b) => a + b, 0)
    const totalMs = Object.values(p.log.ms).reduce((a, b) => a + b, 0)
    console.log(
      `| ${p.db} | ${p.c} | ${p.protocol} | ${p.label} | ${cells.join(' | ')} | ` +
        `${per(totalCount).toFixed(1)} (${per(totalMs).toFixed(2)}) |`,
    )
  }
}
