/**
 * A part of the report on its own (the per-backend scripts: redis-locks.ts, sql-locks.ts, ...): the matrix
 * for a few contenders, printed as Markdown tables. Needs the servers running (scripts/servers.sh start);
 * starts only a private redis-server. Contenders whose server does not answer are listed as skipped. BENCH_ONLY,
 * BENCH_CONCURRENCY and BENCH_WAITERS narrow it like the full run (bench/lib/config.ts).
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { startRedisServer } from '../../packages/latchkey/test/support/redis-server-process.js'
import { summarise } from '../report/aggregate.js'
import { contendedTable, uncontendedTable } from '../report/tables.js'
import { available, runMatrix, scenarios } from '../sections/matrix.js'
import { catalog, serversFromEnv } from './catalog.js'
import { cleanupAll } from './cleanup.js'
import { runConfig } from './config.js'
import { runNamespace } from './contender.js'
import { ContenderPools } from './contender-pools.js'
import { WorkerPool } from './pool.js'

/**
 * Runs the matrix for `ids` (BENCH_QUICK=1 for short cells and one run; BENCH_ONLY, BENCH_CONCURRENCY and
 * BENCH_WAITERS narrow it as in lib/config.ts) and prints one table per scenario, ratios against `base`
 * (against `contendedBase` in the contended tables, where a floor that cannot wait has no row).
 */
export async function runSubset(
  title: string,
  ids: readonly string[],
  base: string,
  contendedBase = base,
): Promise<void> {
  const cfg = runConfig()
  const redis = await startRedisServer()
  const tmp = mkdtempSync(join(tmpdir(), 'latchkey-bench-'))
  const servers = serversFromEnv(redis.url, tmp)
  const namespace = runNamespace()
  const pool = await WorkerPool.start(cfg.workers)
  const pools = new ContenderPools(pool, namespace)
  try {
    // BENCH_ONLY narrows the subset further (e.g. BENCH_ONLY=mariadb-table,mariadb-get_lock BENCH_CONCURRENCY=-, or
    // raw,redis,redis-semaphore for the uncontended Redis cells).
    const defs = catalog(servers).filter((d) => ids.includes(d.id) && (cfg.only === undefined || cfg.only.has(d.id)))
    const { ok, skipped } = await available(pools, defs, namespace)
    const cells = await runMatrix(pools, ok, cfg.matrix, namespace, (l) => process.stderr.write(`${l}\n`))
    const s = summarise(cells)
    const m = cfg.matrix
    console.log(
      `# ${title}\n\n${new Date().toISOString()}, Node ${process.version}; median [min–max] of ${m.runs} run(s), hold ${m.holdMs} ms, think ${m.thinkMs} ms\n`,
    )
    for (const k of skipped) console.log(`- skipped ${k.id}: ${k.reason}`)
    for (const sc of scenarios(m)) {
      console.log(
        `\n## ${sc.startsWith('c') ? `Uncontended, concurrency ${sc.slice(1)}` : `${sc.slice(1)} waiters on one lock`}\n`,
      )
      const rows = ok.filter((d) => sc.startsWith('c') || d.waits)
      console.log(
        sc.startsWith('c')
          ? uncontendedTable(rows, s, cells, sc, base)
          : contendedTable(rows, s, cells, sc, contendedBase),
      )
    }
  } finally {
    await pools.close()
    await pool.close()
    await cleanupAll(servers, namespace)
    await redis.dispose()
    rmSync(tmp, { recursive: true, force: true })
  }
}
