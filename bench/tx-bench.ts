/**
 * latchkey-tx throughput: global transactions/s and p50/p99 latency of a two-branch saga and a two-branch TCC
 * (0 or 2 business writes per branch, with or without the barrier) on the SQLite, PostgreSQL and MariaDB logs at
 * concurrency 1 and 20, beside a no-coordinator baseline doing the same participant calls (2 writes each, same
 * SQL, same transactions, same database), interleaved with them in slices so machine noise hits both.
 *
 *   npx tsx bench/tx-bench.ts [--quick] [--http] [--db=postgres,mariadb,sqlite] [--c=1,20] [--protocol=saga,tcc] [--seconds=3]
 *
 * Printed, never asserted. The ratio column is TPS / baseline TPS of the same database, concurrency and protocol,
 * the format DTM publishes its figures in.
 */
import { randomBytes } from 'node:crypto'
import { cpus, loadavg } from 'node:os'
import { createCoordinator } from 'latchkey-tx'
import { fmt } from './lib/stats.js'
import { startHttpParticipant } from './lib/tx-http.js'
import { type BenchLog, openLog } from './lib/tx-log.js'
import { type DbKind, openParticipant } from './lib/tx-participant.js'
import { printProfile, printTable, type Row } from './lib/tx-report.js'
import { baselineOps, defineOps, drive, type Op, type Protocol, Tally, VARIANTS } from './lib/tx-workload.js'

const args = process.argv.slice(2)
const flag = (name: string) => args.find((a) => a.startsWith(`--${name}=`))?.split('=')[1]
const quick = args.includes('--quick')
const seconds = Number(flag('seconds') ?? (quick ? 1 : 3))
const dbs = (flag('db') ?? 'sqlite,postgres,mariadb').split(',') as DbKind[]
const concurrencies = (flag('c') ?? '1,20').split(',').map(Number)
const protocols = (flag('protocol') ?? 'saga,tcc').split(',') as Protocol[]
/** Adds HTTP-branch cells: the branches are calls to a local participant service (DTM's setting). */
const withHttp = args.includes('--http')
/** Each cell's time is cut into this many slices, taken in turn with the other cells of its group. */
const SLICES = quick ? 2 : 6
const WARMUP_MS = quick ? 200 : 500

const load = () =>
  loadavg()
    .map((l) => l.toFixed(2))
    .join(' ')
const wallStart = performance.now()
console.log(`# latchkey-tx benchmark${quick ? ' (quick)' : ''}: ${seconds} s per cell in ${SLICES} interleaved slices`)
console.log(`node ${process.version}, ${cpus().length} CPUs, load average at start: ${load()}\n`)

const rows: Row[] = []
const profiles: { db: DbKind; c: number; protocol: Protocol; label: string; log: BenchLog['tally']; tx: number }[] = []

for (const db of dbs) {
  const suffix = randomBytes(4).toString('hex')
  // Enough connections for every worker (the shared servers' max_connections is 100 on PostgreSQL).
  const top = Math.max(...concurrencies)
  const participant = await openParticipant(db, suffix, top + 2)
  const log = await openLog(db, suffix, top + 5)
  // Anything but the plain path of a succeeding transaction (retries, aborts, recovery) is counted and shown.
  const unusual = new Map<string, number>()
  const plain = new Set(['created', 'branch-start', 'branch-succeeded', 'succeeded', 'submitted'])
  const tc = createCoordinator({
    store: log.store,
    ...(log.locks === undefined ? {} : { locks: log.locks }),
    onEvent: (e) => {
      if (!plain.has(e.type)) unusual.set(e.type, (unusual.get(e.type) ?? 0) + 1)
      if (process.env.TX_BENCH_EVENTS) console.error(e.type, e.gid, e.branch ?? '', e.op ?? '', String(e.error ?? ''))
    },
  })
  try {
    const ops = VARIANTS.map((v) => ({ v, op: defineOps(tc, participant, v) }))
    const base = baselineOps(participant)
    const web = withHttp ? await startHttpParticipant(tc, participant) : undefined
    for (const c of concurrencies) {
      for (const protocol of protocols) {
        const cells: { label: string; op: Op; tally: Tally }[] = [
          { label: 'no coordinator', op: base[protocol], tally: new Tally() },
          ...ops.map(({ v, op }) => ({
            label: `${v.writes} SQL${v.barrier ? ' + barrier' : ''}`,
            op: op[protocol],
            tally: new Tally(),
          })),
        ]
        if (web !== undefined) {
          cells.push({ label: 'HTTP, no coordinator', op: web.baseline[protocol], tally: new Tally() })
          cells.push({ label: 'HTTP 2 SQL + barrier', op: web.ops[protocol], tally: new Tally() })
        }
        for (const cell of cells) await drive(cell.op, c, WARMUP_MS, undefined)
        const statements = cells.map(() => ({ count: {} as Record<string, number>, ms: {} as Record<string, number> }))
        for (let s = 0; s < SLICES; s++) {
          for (const [i, cell] of cells.entries()) {
            const before = structuredClone(log.tally)
            await drive(cell.op, c, (seconds * 1000) / SLICES, cell.tally)
            const acc = statements[i] as (typeof statements)[number]
            for (const k of Object.keys(log.tally.count)) {
              acc.count[k] = (acc.count[k] ?? 0) + (log.tally.count[k] ?? 0) - (before.count[k] ?? 0)
              acc.ms[k] = (acc.ms[k] ?? 0) + (log.tally.ms[k] ?? 0) - (before.ms[k] ?? 0)
            }
          }
        }
        const baseline = cells[0]?.tally.tps ?? Number.NaN
        for (const [i, cell] of cells.entries()) {
          const { p50, p99 } = cell.tally.quantiles()
          rows.push({
            db,
            c,
            protocol,
            label: cell.label,
            tps: cell.tally.tps,
            p50,
            p99,
            ratio: cell.tally.tps / baseline,
            errors: cell.tally.errors,
            firstError: cell.tally.firstError,
          })
          if (!cell.label.includes('no coordinator') && db !== 'sqlite') {
            profiles.push({ db, c, protocol, label: cell.label, log: statements[i] as never, tx: cell.tally.done })
          }
        }
        const last = rows.slice(-cells.length)
        console.error(`${db} c=${c} ${protocol}: ${last.map((r) => `${r.label} ${fmt(r.tps)}/s`).join(', ')}`)
        if (unusual.size > 0)
          console.error(`  events off the plain path: ${JSON.stringify(Object.fromEntries(unusual))}`)
        unusual.clear()
      }
    }
    await web?.close()
  } finally {
    await tc.close()
    await log.close()
    await participant.close()
  }
}

console.log(`load average at end: ${load()}; run took ${fmt((performance.now() - wallStart) / 1000)} s\n`)
printTable(rows)
printProfile(profiles)
const headline = rows.find(
  (r) => r.db === 'postgres' && r.c === 20 && r.protocol === 'saga' && r.label === '2 SQL + barrier',
)
if (headline !== undefined) {
  console.log(
    `\n**Headline** (saga, 2 SQL per branch + barrier, PostgreSQL log, concurrency 20): ${fmt(headline.tps)} global TPS, ` +
      `${headline.ratio.toFixed(2)}x the no-coordinator baseline (target >= 0.6x; DTM: 531 / 1,232 = 0.43x).`,
  )
}
