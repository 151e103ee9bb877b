/**
 * The flash-sale section of the report on its own, in a minute or two instead of a full `npm run bench`: the
 * same rows (ceiling probe and strategies, alternated round by round) on a few lock backends, printed as the
 * report's table. Starts no shared server; Redis rows and the `reserve` strategy use a private redis-server
 * (or LATCHKEY_BENCH_REDIS_URL, one you started and will remove yourself).
 *
 *   npx tsx bench/flash-sale.ts [--backends=sqlite,memory,redis] [--runs=3] [--buyers=1000] [--stock=300]
 *                               [--strategies=db-atomic,lock,reserve,sharded] [--json=out.json]
 *
 * Backends are those of the full run (sections/flash-sale.ts saleBackends): sqlite, memory, redis, zk, etcd,
 * mariadb-table, pg-table; each needs its server running. Defaults are the full run's sizes (lib/config.ts).
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { loadavg, tmpdir } from 'node:os'
import { join } from 'node:path'
import { STRATEGIES, type Strategy } from '../apps/flash-sale/src/store/types.js'
import { startRedisServer } from '../packages/latchkey/test/support/redis-server-process.js'
import { catalog, serversFromEnv } from './lib/catalog.js'
import { runConfig } from './lib/config.js'
import { ensureBuilt } from './lib/session.js'
import { saleTable } from './report/sections.js'
import { runFlashSale, saleBackends } from './sections/flash-sale.js'

const args = process.argv.slice(2)
const flag = (name: string): string | undefined => args.find((a) => a.startsWith(`--${name}=`))?.split('=')[1]
const count = (name: string, fallback: number): number => {
  const raw = flag(name)
  const n = raw === undefined ? fallback : Number(raw)
  if (!Number.isInteger(n) || n < 1) throw new RangeError(`--${name} must be an integer >= 1, received ${raw}`)
  return n
}
const ids = (flag('backends') ?? 'sqlite,memory,redis').split(',').map((x) => x.trim())
const strategies = (flag('strategies')?.split(',') ?? [...STRATEGIES]).map((x) => x.trim()) as Strategy[]
for (const s of strategies) {
  if (!STRATEGIES.includes(s)) throw new RangeError(`--strategies: unknown strategy ${s} (${STRATEGIES.join(', ')})`)
}
const full = runConfig({}).sale
const sizes = {
  ...full,
  runs: count('runs', full.runs),
  buyers: count('buyers', full.buyers),
  stock: count('stock', full.stock),
}

const log = (line: string) => process.stderr.write(`${line}\n`)
const ROOT = join(import.meta.dirname, '..')
const dist = ensureBuilt(ROOT, log)
const ownRedis = process.env.LATCHKEY_BENCH_REDIS_URL === undefined ? await startRedisServer() : undefined
const redisUrl = process.env.LATCHKEY_BENCH_REDIS_URL ?? (ownRedis?.url as string)
const tmp = mkdtempSync(join(tmpdir(), 'latchkey-bench-sale-'))
try {
  const servers = serversFromEnv(redisUrl, tmp)
  const all = saleBackends(catalog(servers), servers, tmp)
  const unknown = ids.filter((id) => !all.some((b) => b.id === id))
  if (unknown.length > 0) throw new RangeError(`--backends: unknown ${unknown.join(', ')} (${all.map((b) => b.id)})`)
  // In the order given: the first runs the lock-free strategies too.
  const backends = ids.map((id) => all.find((b) => b.id === id)).filter((b) => b !== undefined)
  const load = () =>
    loadavg()
      .map((l) => l.toFixed(2))
      .join(' ')
  const loadBefore = load()
  const r = await runFlashSale(backends, { ...sizes, backends: backends.length, redisUrl, strategies }, log)
  const flashSale = { ...r, dist, backends: backends.map(({ id, label, workers }) => ({ id, label, workers })) }
  console.log(
    `# Flash-sale section alone\n\n${new Date().toISOString()}, Node ${process.version}, load ${loadBefore} before, ${load()} after; ` +
      `${sizes.buyers} buyers (${sizes.processes} processes × ${sizes.concurrency} in flight), ${sizes.stock} units, ` +
      `${sizes.runs} round(s); library ${dist}\n`,
  )
  console.log(saleTable(flashSale))
  const json = flag('json')
  if (json !== undefined) writeFileSync(json, `${JSON.stringify(flashSale, null, 1)}\n`)
} finally {
  await ownRedis?.dispose()
  rmSync(tmp, { recursive: true, force: true })
}
