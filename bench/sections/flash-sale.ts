/**
 * The flash-sale app (apps/flash-sale) under its own load generator: orders/s and latency per strategy x
 * lock backend, through the app's exports (startCluster, createSale, runSale, runLoad).
 * The store is SQLite in every row, so the lock backend is what varies. Strategies that take no latchkey
 * lock (db-atomic, reserve) run once, on the first backend.
 *
 * Each backend's cluster also runs the `ceiling` row: the same load sent to the app's ceiling probe (a twin of
 * the order route that answers 409 SOLD_OUT from memory, apps/flash-sale/src/server/ceiling-route.ts), in
 * turn with the strategies of each round. It is the most orders/s this machine serves with this load
 * generator, and the report shows every strategy as a fraction of it, round by round.
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { type ClusterOptions, startCluster } from '../../apps/flash-sale/src/cluster.js'
import { type LoadResult, quantile, runLoad } from '../../apps/flash-sale/src/load/run-load.js'
import { runSale } from '../../apps/flash-sale/src/load/run-sale.js'
import { createSale } from '../../apps/flash-sale/src/load/sale-client.js'
import { randomAdminToken } from '../../apps/flash-sale/src/server/admin-auth.js'
import { STRATEGIES, type Strategy } from '../../apps/flash-sale/src/store/types.js'
import type { Servers } from '../lib/catalog.js'
import { cleaners } from '../lib/cleanup.js'
import type { ContenderDef } from '../lib/contender-defs.js'
import { runOrder } from './matrix.js'

/** The row of the ceiling probe, run in turn with the strategies. */
export const CEILING = 'ceiling'

/** A lock backend the service is given. */
export interface SaleBackend {
  readonly id: string
  readonly label: string
  readonly url: string
  /** Service processes (1 for memory: its locks do not cross processes). */
  readonly workers: number
  /** Removes what the sales left on the lock server, by lock-name prefix. */
  readonly cleanup?: (prefix: string) => Promise<void>
}

/** Sizes of the section. */
export interface SaleConfig {
  readonly runs: number
  readonly buyers: number
  readonly stock: number
  readonly processes: number
  readonly concurrency: number
  /** How many of the backends to run (the first ones). */
  readonly backends: number
  /** Redis for the `reserve` strategy (the private server of the run). */
  readonly redisUrl: string
  /** Only these strategies (all by default; the ceiling row always runs). */
  readonly strategies?: readonly Strategy[]
}

/** One sale. */
export interface SaleRecord {
  readonly backend: string
  readonly strategy: string
  readonly run: number
  readonly ordersPerSecond?: number
  readonly p50?: number
  readonly p99?: number
  readonly soldInSeconds?: number
  readonly sold?: number
  readonly oversold?: number
  readonly invariantsHold?: boolean
  readonly error?: string
}

const LOCK_FREE = new Set<string>(['db-atomic', 'reserve'])

/** The admin token of the bench's own services (sale creation and the audit need it). */
const ADMIN_TOKEN = randomAdminToken()

/** The figures of one load, whatever it was sent to. */
function figures(result: LoadResult) {
  const { latencies, elapsedMs } = result
  return {
    ordersPerSecond: (latencies.length / elapsedMs) * 1000,
    p50: quantile(latencies, 0.5),
    p99: quantile(latencies, 0.99),
  }
}

/** The same buyers sent to the ceiling probe (no sale behind it: the probe refuses every order from memory). */
async function ceilingLoad(urls: readonly string[], cfg: SaleConfig) {
  const result = await runLoad({
    urls,
    saleId: CEILING,
    target: 'ceiling',
    buyers: cfg.buyers,
    processes: cfg.processes,
    concurrency: cfg.concurrency,
  })
  const { counts } = result
  // Every buyer must have been told SOLD_OUT by the probe, or the figure is of something else.
  const allRefused = counts.ordered === 0 && counts.failed === 0 && counts.soldOut === cfg.buyers
  return {
    ...figures(result),
    invariantsHold: allRefused,
    ...(allRefused ? {} : { error: `answers ${JSON.stringify(counts)}` }),
  }
}

async function oneSale(urls: readonly string[], strategy: Strategy, cfg: SaleConfig, saleIds: string[]) {
  const sale = { item: `bench-${strategy}`, stock: cfg.stock, strategy }
  const { id } = await createSale(urls[0] as string, sale, ADMIN_TOKEN)
  saleIds.push(id)
  const row = await runSale({
    urls,
    strategy,
    saleId: id,
    stock: cfg.stock,
    buyers: cfg.buyers,
    processes: cfg.processes,
    concurrency: cfg.concurrency,
    progress: false,
    adminToken: ADMIN_TOKEN,
  })
  const { counts, soldInMs } = row.result
  return {
    ...figures(row.result),
    soldInSeconds: soldInMs / 1000,
    sold: counts.ordered + counts.recovered,
    oversold: row.oversold,
    invariantsHold: row.checks.every((c) => c.ok),
  }
}

async function onBackend(b: SaleBackend, strategies: readonly Strategy[], cfg: SaleConfig): Promise<SaleRecord[]> {
  const dir = mkdtempSync(join(tmpdir(), 'latchkey-bench-sale-'))
  // redisUrl only matters to the reserve strategy; built apart so an app without it simply ignores it.
  const options: Record<string, unknown> = {
    workers: b.workers,
    storeUrl: `sqlite:${join(dir, 'store.db')}`,
    // The ceiling row's probe (off in a real service).
    ceilingProbe: true,
    backendUrl: b.url,
    redisUrl: cfg.redisUrl,
    adminToken: ADMIN_TOKEN,
  }
  const saleIds: string[] = []
  const records: SaleRecord[] = []
  const cluster = await startCluster(options as ClusterOptions)
  try {
    // Unreported warm-up (JIT, connections), as the app's demo does.
    const warmUp = { stock: 10, buyers: 500, processes: 1, progress: false, adminToken: ADMIN_TOKEN }
    await runSale({ urls: cluster.urls, strategy: 'db-atomic', ...warmUp })
    // The probe's own route too: it runs first in the first round, and must not be measured cold there.
    await runLoad({ urls: cluster.urls, saleId: CEILING, target: 'ceiling', buyers: 500, processes: 1 })
    for (let run = 0; run < cfg.runs; run++) {
      for (const strategy of runOrder([CEILING, ...strategies], run)) {
        try {
          const measured =
            strategy === CEILING
              ? await ceilingLoad(cluster.urls, cfg)
              : await oneSale(cluster.urls, strategy as Strategy, cfg, saleIds)
          records.push({ backend: b.id, strategy, run, ...measured })
        } catch (error) {
          const message = error instanceof Error ? error.message : String(error)
          records.push({ backend: b.id, strategy, run, error: message.split('\n')[0] ?? message })
        }
      }
    }
  } finally {
    await cluster.close()
    for (const id of saleIds) await b.cleanup?.(`flash-sale:sale:${id}`).catch(() => undefined)
    rmSync(dir, { recursive: true, force: true })
  }
  return records
}

/** Runs every strategy the app has on every backend. */
export async function runFlashSale(
  backends: readonly SaleBackend[],
  cfg: SaleConfig,
  log: (line: string) => void,
): Promise<{ records: SaleRecord[]; strategies: string[] }> {
  const records: SaleRecord[] = []
  for (const [i, b] of backends.slice(0, cfg.backends).entries()) {
    const strategies = STRATEGIES.filter(
      (s) => (i === 0 || !LOCK_FREE.has(s)) && (cfg.strategies === undefined || cfg.strategies.includes(s)),
    )
    const t0 = performance.now()
    try {
      records.push(...(await onBackend(b, strategies, cfg)))
    } catch (error) {
      records.push({
        backend: b.id,
        strategy: '*',
        run: 0,
        error: error instanceof Error ? error.message : String(error),
      })
    }
    log(`flash-sale ${b.id}: ${((performance.now() - t0) / 1000).toFixed(1)} s`)
  }
  return { records, strategies: [CEILING, ...STRATEGIES] }
}

/**
 * The flash-sale's lock backends: the embedded ones and one of each server family (SQLite store throughout),
 * those of `defs` (the contenders that answered) only.
 */
export function saleBackends(defs: readonly ContenderDef[], servers: Servers, tmp: string): SaleBackend[] {
  const clean = cleaners(servers)
  const url = (id: string) => {
    const spec = defs.find((d) => d.id === id)?.spec('x', 1)
    return spec?.type === 'latchkey' ? spec.url : ''
  }
  return [
    { id: 'sqlite', label: 'SQLite', url: `sqlite:${join(tmp, 'sale-locks.db')}`, workers: 2 },
    { id: 'memory', label: 'memory', url: 'memory:', workers: 1 },
    { id: 'redis', label: 'Redis', url: url('redis'), workers: 2 },
    { id: 'zk', label: 'ZooKeeper standalone', url: url('zk'), workers: 2, cleanup: clean.zk },
    { id: 'etcd', label: 'etcd', url: url('etcd'), workers: 2, cleanup: clean.etcd },
    { id: 'mariadb-table', label: 'MariaDB table', url: url('mariadb-table'), workers: 2, cleanup: clean.mysql },
    { id: 'pg-table', label: 'PostgreSQL table', url: url('pg-table'), workers: 2, cleanup: clean.postgres },
  ].filter((b) => b.url !== '')
}
