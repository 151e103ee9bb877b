/**
 * latchkey-tx XA throughput: transfers/s and p50/p99 latency of `tc.xa` moving money from a MariaDB account to a
 * PostgreSQL account (two branches: XA START … XA PREPARE on MariaDB, BEGIN … PREPARE TRANSACTION on PostgreSQL,
 * the decision in the log, then XA COMMIT and COMMIT PREPARED), beside the same two UPDATEs with no XA (each
 * autocommitted: no atomicity across the two databases) and the same XA statements sent bare (no log, no lease, no
 * recovery: what the databases cost, so the rest is the coordinator's), in the same run, interleaved in slices so
 * machine noise hits every cell. The log is SQLite (the embedded default) or PostgreSQL.
 *
 *   npm run build && npx tsx bench/tx-xa-bench.ts [--seconds=3] [--c=1,8] [--log=sqlite,postgres]
 *
 * Printed, never asserted. Needs PostgreSQL with max_prepared_transactions > 0 (scripts/servers/postgres.sh).
 */
import { randomBytes } from 'node:crypto'
import { mkdtempSync, rmSync } from 'node:fs'
import { cpus, loadavg, tmpdir } from 'node:os'
import { join } from 'node:path'
import { type Coordinator, createCoordinator, postgresStore } from 'latchkey-tx'
import mysql from 'mysql2/promise'
import pg from 'pg'
import { fmt } from './lib/stats.js'
import { drive, type Op, Tally } from './lib/tx-workload.js'

const MYSQL_URL = process.env.LATCHKEY_MYSQL_URL ?? 'mysql://root@127.0.0.1:3306/test'
const PG_URL = process.env.LATCHKEY_POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/test'
const args = process.argv.slice(2)
const flag = (name: string) => args.find((a) => a.startsWith(`--${name}=`))?.split('=')[1]
const seconds = Number(flag('seconds') ?? 3)
const concurrencies = (flag('c') ?? '1,8').split(',').map(Number)
const logs = (flag('log') ?? 'sqlite,postgres').split(',')
const SLICES = 3
const ACCOUNTS = 256

const load = () =>
  loadavg()
    .map((l) => l.toFixed(2))
    .join(' ')
console.log(`# latchkey-tx XA benchmark: ${seconds} s per cell in ${SLICES} interleaved slices`)
console.log(`node ${process.version}, ${cpus().length} CPUs, load average at start: ${load()}\n`)

const suffix = randomBytes(4).toString('hex')
const table = `bench_xa_${suffix}`
const top = Math.max(...concurrencies)
const maria = mysql.createPool({ uri: MYSQL_URL, connectionLimit: top * 2 + 2 })
const pgPool = new pg.Pool({ connectionString: PG_URL, max: top * 2 + 2 })
const logPool = new pg.Pool({ connectionString: PG_URL, max: top + 4 })
const tmp = mkdtempSync(join(tmpdir(), 'latchkey-xa-bench-'))
const rows = Array.from({ length: ACCOUNTS }, (_, i) => i + 1)
await maria.query(`CREATE TABLE ${table} (id INT PRIMARY KEY, bal BIGINT NOT NULL) ENGINE=InnoDB`)
await maria.query(`INSERT INTO ${table} VALUES ${rows.map((i) => `(${i}, 1000000)`).join(', ')}`)
await pgPool.query(`CREATE TABLE ${table} (id INT PRIMARY KEY, bal BIGINT NOT NULL)`)
await pgPool.query(`INSERT INTO ${table} SELECT g, 1000000 FROM generate_series(1, ${ACCOUNTS}) g`)

const account = () => 1 + Math.floor(Math.random() * ACCOUNTS)
const debit = `UPDATE ${table} SET bal = bal - 1 WHERE id = ?`
const credit = `UPDATE ${table} SET bal = bal + 1 WHERE id = $1`

const plain: Op = async () => {
  await maria.query(debit, [account()])
  await pgPool.query(credit, [account()])
}
let bareN = 0
/** The statements of one XA transfer, sent by hand: the databases' share of the cost. */
const bareXa: Op = async () => {
  const g = `bench-${suffix}-${++bareN}`
  const m = await maria.getConnection()
  const p = await pgPool.connect()
  try {
    await m.query(`XA START '${g}', 'b1'`)
    await m.query(debit, [account()])
    await m.query(`XA END '${g}', 'b1'`)
    await m.query(`XA PREPARE '${g}', 'b1'`)
    await p.query('BEGIN')
    await p.query(credit, [account()])
    await p.query(`PREPARE TRANSACTION '${g}'`)
    await m.query(`XA COMMIT '${g}', 'b1'`)
    await p.query(`COMMIT PREPARED '${g}'`)
  } finally {
    m.release()
    p.release()
  }
}
const xaOp =
  (tc: Coordinator): Op =>
  async () => {
    const r = await tc.xa('bench-transfer', async (x) => {
      await x.branch(maria, (c) => c.query(debit, [account()]))
      await x.branch(pgPool, (c) => c.query(credit, [account()]))
    })
    if (r.status !== 'succeeded') throw r.error ?? new Error(r.status)
  }

const coordinators = logs.map((log) => ({
  log,
  tc: createCoordinator({
    store:
      log === 'postgres'
        ? postgresStore({ pool: logPool, tablePrefix: `bench_xa_${suffix}_` })
        : `sqlite:${join(tmp, 'tx.db')}`,
    resources: { maria, pg: pgPool },
  }),
}))

try {
  console.log('| concurrency | variant | transfers/s | p50 ms | p99 ms | errors | vs no XA |')
  console.log('| ---: | --- | ---: | ---: | ---: | ---: | ---: |')
  for (const c of concurrencies) {
    const cells = [
      { label: 'two UPDATEs, no XA (autocommit each)', op: plain, tally: new Tally() },
      { label: 'the XA statements bare (no coordinator)', op: bareXa, tally: new Tally() },
      ...coordinators.map(({ log, tc }) => ({ label: `tc.xa, ${log} log`, op: xaOp(tc), tally: new Tally() })),
    ]
    for (const cell of cells) await drive(cell.op, c, 300, undefined)
    for (let s = 0; s < SLICES; s++) {
      for (const cell of cells) await drive(cell.op, c, (seconds * 1000) / SLICES, cell.tally)
    }
    const base = cells[0]?.tally.tps ?? Number.NaN
    for (const { label, tally } of cells) {
      const q = tally.quantiles()
      console.log(
        `| ${c} | ${label} | ${fmt(tally.tps)} | ${fmt(q.p50)} | ${fmt(q.p99)} | ${tally.errors} | ${(tally.tps / base).toFixed(2)} |`,
      )
      if (tally.firstError !== undefined) console.error(`  first error of ${label}:`, tally.firstError)
    }
  }
  const [[m]] = (await maria.query(`SELECT SUM(bal) AS s FROM ${table}`)) as unknown as [[{ s: string }]]
  const { rows: p } = await pgPool.query(`SELECT SUM(bal) AS s FROM ${table}`)
  console.log(`\nmoney: MariaDB ${m.s} + PostgreSQL ${p[0]?.s} = ${BigInt(m.s) + BigInt(String(p[0]?.s))}`)
  console.log(`load average at end: ${load()}`)
} finally {
  for (const { tc } of coordinators) await tc.close()
  await maria.query(`DROP TABLE IF EXISTS ${table}`)
  await pgPool.query(`DROP TABLE IF EXISTS ${table}`)
  for (const t of ['global', 'branch', 'history']) await logPool.query(`DROP TABLE IF EXISTS bench_xa_${suffix}_${t}`)
  await maria.end()
  await pgPool.end()
  await logPool.end()
  rmSync(tmp, { recursive: true, force: true })
}
