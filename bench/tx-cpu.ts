/**
 * CPU per global transaction on PostgreSQL: this process's CPU plus that of the PostgreSQL backends serving it,
 * for the no-coordinator baseline, the barrier alone, and the saga with 2 SQL per branch + barrier, each at
 * concurrency 20 for a fixed number of units. On a 2-core machine where TPS is CPU-bound, the ratio of CPU per
 * transaction predicts the ratio of TPS on a quiet machine, and it hardly moves with other load (TPS does).
 *
 *   npx tsx bench/tx-cpu.ts [--units=2000] [--c=20]
 *
 * Linux only (reads /proc/<pid>/stat of the backends, found by application_name).
 */
import { randomBytes, randomUUID } from 'node:crypto'
import { readFileSync } from 'node:fs'
import { loadavg } from 'node:os'
import pg from 'pg'

const arg = (name: string) => process.argv.find((a) => a.startsWith(`--${name}=`))?.split('=')[1]
const units = Number(arg('units') ?? 2000)
const c = Number(arg('c') ?? 20)
const app = `txcpu_${randomBytes(3).toString('hex')}`
const base = process.env.LATCHKEY_POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/test'
process.env.LATCHKEY_POSTGRES_URL = `${base}${base.includes('?') ? '&' : '?'}application_name=${app}`

const { createCoordinator } = await import('latchkey-tx')
const { openLog } = await import('./lib/tx-log.js')
const { openParticipant, PG_URL } = await import('./lib/tx-participant.js')
const { defineOps } = await import('./lib/tx-workload.js')

const ticks = Number(100) // USER_HZ on Linux
const monitor = new pg.Pool({ connectionString: base, max: 1 })

/** CPU ms of this process and of every backend with our application_name. */
async function cpuMs(): Promise<{ node: number; db: number }> {
  const { rows } = await monitor.query('SELECT pid FROM pg_stat_activity WHERE application_name = $1', [app])
  let db = 0
  for (const { pid } of rows) {
    try {
      const f = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]?.split(' ') ?? []
      db += ((Number(f[11]) + Number(f[12])) * 1000) / ticks
    } catch {
      // the backend ended
    }
  }
  const u = process.cpuUsage()
  return { node: (u.user + u.system) / 1000, db }
}

async function measure(label: string, op: () => Promise<void>): Promise<void> {
  let left = units
  const worker = async () => {
    while (left-- > 0) await op()
  }
  left = 200
  await Promise.all(Array.from({ length: c }, worker)) // warm-up: connections open
  left = units
  const before = await cpuMs()
  const t0 = performance.now()
  await Promise.all(Array.from({ length: c }, worker))
  const ms = performance.now() - t0
  const after = await cpuMs()
  const node = (after.node - before.node) / units
  const db = (after.db - before.db) / units
  console.log(
    `| ${label} | ${(node + db).toFixed(3)} | ${node.toFixed(3)} | ${db.toFixed(3)} | ${((units * 1000) / ms).toFixed(0)} |`,
  )
}

const suffix = randomBytes(4).toString('hex')
console.log(
  `tx-cpu: PostgreSQL (${PG_URL.replace(/\?.*/, '')}), c=${c}, ${units} units; load ${loadavg()[0]?.toFixed(2)}`,
)
const participant = await openParticipant('postgres', suffix, c + 2)
const log = await openLog('postgres', suffix, c + 5)
const tc = createCoordinator({ store: log.store })
try {
  const saga = defineOps(tc, participant, { writes: 2, barrier: true }).saga
  console.log('\n| saga, 2 SQL per branch | CPU ms / unit | node | PostgreSQL | TPS (load-dependent) |')
  console.log('| --- | ---: | ---: | ---: | ---: |')
  await measure('no coordinator', async () => {
    await participant.branch(2, undefined)
    await participant.branch(2, undefined)
  })
  await measure('barrier only', async () => {
    const gid = randomUUID()
    await participant.branch(2, { gid, branch: 'out', op: 'action' })
    await participant.branch(2, { gid, branch: 'in', op: 'action' })
  })
  await measure('latchkey-tx saga + barrier', saga)
} finally {
  await tc.close()
  await log.close()
  await participant.close()
  await monitor.end()
}
