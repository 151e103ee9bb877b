/**
 * CPU per order request of the flash-sale service processes, per strategy (and the ceiling probe): the
 * services' user+system CPU time (/proc/<pid>/stat) over a sale, divided by the requests answered. Also prints
 * orders/s.
 *
 *   npx tsx bench/flash-sale-cpu.ts [--backend=sqlite:/tmp/x.db] [--strategies=lock,sharded] [--runs=3] [--workers=2]
 *                                   [--ceiling=0] [--prof=DIR]
 *
 * --prof=DIR writes a V8 CPU profile of each service process into DIR (--cpu-prof); --ceiling=0 leaves out the probe.
 * What the sales leave on a server backend (fencing counters and rows stay after a release by design) is removed at
 * the end, by the sales' lock-name prefix, as the full run does.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Redis } from 'ioredis'
import { startCluster } from '../apps/flash-sale/src/cluster.js'
import { runLoad } from '../apps/flash-sale/src/load/run-load.js'
import { runSale } from '../apps/flash-sale/src/load/run-sale.js'
import { createSale } from '../apps/flash-sale/src/load/sale-client.js'
import { randomAdminToken } from '../apps/flash-sale/src/server/admin-auth.js'
import type { Strategy } from '../apps/flash-sale/src/store/types.js'
import { deleteKeys } from '../packages/latchkey/test/support/redis-backend-module.js'
import { serversFromEnv } from './lib/catalog.js'
import { cleaners } from './lib/cleanup.js'

const args = process.argv.slice(2)
const flag = (name: string) => args.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3)
const dir = mkdtempSync(join(tmpdir(), 'latchkey-sale-cpu-'))
const backendUrl = flag('backend') ?? `sqlite:${join(dir, 'locks.db')}`
const strategies = (flag('strategies') ?? 'db-atomic,lock,sharded').split(',') as Strategy[]
const runs = Number(flag('runs') ?? 3)
const buyers = Number(flag('buyers') ?? 1_000)
const stock = Number(flag('stock') ?? 300)
const adminToken = randomAdminToken()
const TICK = 100 // USER_HZ

function cpuMs(pids: readonly number[]): number {
  let ticks = 0
  for (const pid of pids) {
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]?.split(' ') ?? []
    ticks += Number(fields[11]) + Number(fields[12])
  }
  return (ticks * 1000) / TICK
}

/** Lock acquisitions so far, summed over the services (their `latchkey_acquisitions_total`). */
async function acquisitions(urls: readonly string[]): Promise<number> {
  let n = 0
  for (const url of urls) {
    const text = await (await fetch(`${url}/metrics`)).text()
    for (const line of text.split('\n'))
      if (line.startsWith('latchkey_acquisitions_total')) n += Number(line.split(' ').at(-1))
  }
  return n
}

/** Commands the lock backend's Redis ran so far (INFO commandstats), when the backend is a redis:// URL. */
async function redisCalls(): Promise<number | undefined> {
  if (!backendUrl.startsWith('redis://')) return undefined
  const client = new Redis(backendUrl)
  try {
    const info = await client.info('commandstats')
    return [...info.matchAll(/calls=(\d+)/g)].reduce((n, m) => n + Number(m[1]), 0)
  } finally {
    client.disconnect()
  }
}

const cluster = await startCluster({
  workers: Number(flag('workers') ?? 2),
  storeUrl: `sqlite:${join(dir, 'store.db')}`,
  backendUrl,
  ...(process.env.LATCHKEY_BENCH_REDIS_URL === undefined ? {} : { redisUrl: process.env.LATCHKEY_BENCH_REDIS_URL }),
  adminToken,
  ceilingProbe: true,
  ...(flag('prof') === undefined ? {} : { nodeFlags: ['--cpu-prof', `--cpu-prof-dir=${flag('prof')}`] }),
})
/** The cleanup, by lock-name prefix, of what the sales leave on the backend's server (none for the embedded ones). */
function leftoverCleanup(url: string): ((prefix: string) => Promise<void>) | undefined {
  const scheme = url.slice(0, url.indexOf(':'))
  const host = scheme === 'sqlite' || scheme === 'memory' ? '' : new URL(url).host
  const clean = cleaners({ ...serversFromEnv('', dir), etcd: `http://${host}`, zk: host })
  if (scheme === 'redis' || scheme === 'rediss') return (prefix) => deleteKeys(prefix, url)
  const byScheme: Record<string, ((prefix: string) => Promise<void>) | undefined> = {
    etcd: clean.etcd,
    zookeeper: clean.zk,
    mysql: clean.mysql,
    postgres: clean.postgres,
    postgresql: clean.postgres,
  }
  return byScheme[scheme]
}

const saleIds: string[] = []
const pids = cluster.children.map((c) => c.pid as number)
try {
  await runSale({
    urls: cluster.urls,
    strategy: 'db-atomic',
    stock: 10,
    buyers: 500,
    processes: 1,
    progress: false,
    adminToken,
  })
  for (let run = 0; run < runs; run++) {
    for (const s of flag('ceiling') === '0' ? strategies : ['ceiling', ...strategies]) {
      const a0 = await acquisitions(cluster.urls)
      const r0 = await redisCalls()
      const c0 = cpuMs(pids)
      let requests: number
      let rate: number
      let sold = ''
      if (s === 'ceiling') {
        const r = await runLoad({
          urls: cluster.urls,
          saleId: 'x',
          target: 'ceiling',
          buyers,
          processes: 2,
          concurrency: 64,
        })
        requests = r.latencies.length
        rate = (requests / r.elapsedMs) * 1000
      } else {
        const { id } = await createSale(
          cluster.urls[0] as string,
          { item: s, stock, strategy: s as Strategy },
          adminToken,
        )
        saleIds.push(id)
        const row = await runSale({
          urls: cluster.urls,
          strategy: s as Strategy,
          saleId: id,
          stock,
          buyers,
          processes: 2,
          concurrency: 64,
          progress: false,
          adminToken,
        })
        requests = row.result.latencies.length
        rate = (requests / row.result.elapsedMs) * 1000
        sold = ` sold in ${(row.result.soldInMs / 1000).toFixed(2)} s, ok ${row.checks.every((c) => c.ok)}, busy ${row.result.counts.busy}`
      }
      const c1 = cpuMs(pids)
      sold += `, ${(await acquisitions(cluster.urls)) - a0} lock acquisitions`
      const r1 = await redisCalls()
      if (r0 !== undefined && r1 !== undefined) sold += `, ${r1 - r0} Redis commands`
      console.log(
        `${run} ${s.padEnd(9)} ${rate.toFixed(0).padStart(6)} req/s  ${(((c1 - c0) * 1000) / requests).toFixed(0).padStart(5)} µs CPU/request (services)${sold}`,
      )
    }
  }
} finally {
  await cluster.close()
  const cleanup = leftoverCleanup(backendUrl)
  for (const id of saleIds) {
    await cleanup?.(`flash-sale:sale:${id}`).catch((error: unknown) => console.error(`cleanup of sale ${id}: ${error}`))
  }
  rmSync(dir, { recursive: true, force: true })
}
