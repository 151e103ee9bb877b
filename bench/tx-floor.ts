/**
 * What a leaner log could reach, on PostgreSQL: the headline cell's participant work (a two-branch saga, 2 writes
 * per branch, inside the barrier) plus hand-written log writes, beside the no-coordinator baseline, interleaved.
 * Not latchkey-tx: a floor for "what if the coordinator wrote less", to size the changes the report proposes.
 *
 *   npx tsx bench/tx-floor.ts [--c=20] [--seconds=3]
 *
 * - `barrier only`: the two participant calls with the barrier, no log at all;
 * - `4-statement log`: + a DTM-like log, one autocommit statement each: insert the transaction with its branches,
 *   mark each branch done, mark the transaction done (what DTM writes for this saga);
 * - `4-statement log + lease`: + latchkey's PostgreSQL lease (tryAcquire and release), as latchkey-tx took one;
 * - `3-statement log`: the fewest durable log writes a saga that resumes after a crash needs, each an autocommit
 *   statement: the transaction with its first step started (before the first call), the first step done with the
 *   second started (before the second call), the outcome (before run() resolves) — what latchkey-tx now writes;
 * - `3-statement log alone`: those three writes with no participant call at all: what the log costs by itself;
 * - `2-statement log`, `1-statement log`: the same without the outcome write, and with the create only (neither
 *   is a durable saga: they size what each sequential durable write costs).
 */
import { randomBytes, randomUUID } from 'node:crypto'
import { loadavg } from 'node:os'
import { createLocks } from 'latchkey'
import { postgresBackend } from 'latchkey/postgres'
import pg from 'pg'
import { fmt } from './lib/stats.js'
import { openParticipant, PG_URL } from './lib/tx-participant.js'
import { drive, type Op, Tally } from './lib/tx-workload.js'

const arg = (name: string) => process.argv.find((a) => a.startsWith(`--${name}=`))?.split('=')[1]
const c = Number(arg('c') ?? 20)
const seconds = Number(arg('seconds') ?? 3)
const SLICES = 6
const suffix = randomBytes(4).toString('hex')
const t = `bench_tx_floor_${suffix}`
console.log(`tx-floor: PostgreSQL, concurrency ${c}, ${seconds} s per cell; load average ${loadavg()[0]?.toFixed(2)}`)

const participant = await openParticipant('postgres', suffix, c + 2)
const pool = new pg.Pool({ connectionString: PG_URL, max: c + 5 })
await pool.query(
  `CREATE TABLE ${t} (gid varchar(64) PRIMARY KEY, status varchar(16), branches jsonb, updated_at bigint)`,
)
const backend = postgresBackend({ pool })
const locks = createLocks({ backend, namespace: `bench-floor-${suffix}`, requireFencing: true })
try {
  const branches = async (gid: string) => {
    await participant.branch(2, { gid, branch: 'out', op: 'action' })
    await participant.branch(2, { gid, branch: 'in', op: 'action' })
  }
  const logged = async (gid: string) => {
    await pool.query(`INSERT INTO ${t} VALUES ($1, 'submitted', '{"out":"prepared","in":"prepared"}', $2)`, [
      gid,
      Date.now(),
    ])
    for (const b of ['out', 'in']) {
      await participant.branch(2, { gid, branch: b, op: 'action' })
      await pool.query(
        `UPDATE ${t} SET branches = jsonb_set(branches, $2, '"succeeded"'), updated_at = $3 WHERE gid = $1`,
        [gid, `{${b}}`, Date.now()],
      )
    }
    await pool.query(`UPDATE ${t} SET status = 'succeeded', updated_at = $2 WHERE gid = $1`, [gid, Date.now()])
  }
  const minimal = async (gid: string, work: boolean, writes = 3) => {
    await pool.query(`INSERT INTO ${t} VALUES ($1, 'submitted', '{"out":"running","in":"pending"}', $2)`, [
      gid,
      Date.now(),
    ])
    if (work) await participant.branch(2, { gid, branch: 'out', op: 'action' })
    if (writes >= 2) {
      await pool.query(
        `UPDATE ${t} SET branches = '{"out":"succeeded","in":"running"}', updated_at = $2 WHERE gid = $1`,
        [gid, Date.now()],
      )
    }
    if (work) await participant.branch(2, { gid, branch: 'in', op: 'action' })
    if (writes < 3) return
    await pool.query(
      `UPDATE ${t} SET status = 'succeeded', branches = '{"out":"succeeded","in":"succeeded"}', updated_at = $2 WHERE gid = $1`,
      [gid, Date.now()],
    )
  }
  const cells: { label: string; op: Op; tally: Tally }[] = [
    {
      label: 'no coordinator',
      op: async () => {
        await participant.branch(2, undefined)
        await participant.branch(2, undefined)
      },
      tally: new Tally(),
    },
    { label: 'barrier only', op: () => branches(randomUUID()), tally: new Tally() },
    { label: '4-statement log', op: () => logged(randomUUID()), tally: new Tally() },
    {
      label: '4-statement log + lease',
      op: async () => {
        const gid = randomUUID()
        const lease = await locks.mutex(`tx:${gid}`).tryAcquire({ ttlMs: 10_000 })
        try {
          await logged(gid)
        } finally {
          await lease?.release()
        }
      },
      tally: new Tally(),
    },
  ]
  cells.push(
    { label: '3-statement log', op: () => minimal(randomUUID(), true), tally: new Tally() },
    { label: '3-statement log alone', op: () => minimal(randomUUID(), false), tally: new Tally() },
    { label: '2-statement log (no outcome write)', op: () => minimal(randomUUID(), true, 2), tally: new Tally() },
    { label: '1-statement log (the create only)', op: () => minimal(randomUUID(), true, 1), tally: new Tally() },
  )
  for (const cell of cells) await drive(cell.op, c, 500, undefined)
  for (let s = 0; s < SLICES; s++)
    for (const cell of cells) await drive(cell.op, c, (seconds * 1000) / SLICES, cell.tally)
  const base = cells[0]?.tally.tps ?? Number.NaN
  console.log('\n| saga, 2 SQL per branch | TPS | p50 ms | p99 ms | x baseline |\n| --- | ---: | ---: | ---: | ---: |')
  for (const cell of cells) {
    const { p50, p99 } = cell.tally.quantiles()
    const errors = cell.tally.errors > 0 ? ` (${cell.tally.errors} errors: ${String(cell.tally.firstError)})` : ''
    console.log(
      `| ${cell.label} | ${fmt(cell.tally.tps)}${errors} | ${p50.toFixed(2)} | ${p99.toFixed(2)} | ${(cell.tally.tps / base).toFixed(2)}x |`,
    )
  }
} finally {
  await locks.close()
  await backend.close()
  await pool.query(`DROP TABLE IF EXISTS ${t}`)
  await pool.end()
  await participant.close()
}
