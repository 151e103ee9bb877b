/**
 * `npm run bench`: the whole report in one command. Starts the servers (scripts/servers.sh start, plus the
 * ZooKeeper ensemble), a private redis-server and 4 worker processes; runs the matrix (Redis peers and
 * every backend), redis-benchmark, the scale tests and the flash-sale load; removes what it left on the
 * servers; writes bench/results.jsonl, bench/RESULTS.md and bench/charts/*.svg.
 *
 *   npm run bench                       full run (~28 min on 2 cores: 28.3 min measured with the 2.5 s ramp and the warm-up)
 *   BENCH_QUICK=1 npx tsx bench/run.ts  quick check (~3 min), written to $TMPDIR/latchkey-bench-quick/
 *   npx tsx bench/run.ts --report-only  RESULTS.md and charts again from results.jsonl
 * BENCH_SECTIONS=matrix,scale,sale and BENCH_ONLY=<contender ids> narrow a run (lib/config.ts); the flash-sale
 * section alone, without the shared servers' start-up: npx tsx bench/flash-sale.ts. BENCH_OUT=<dir>
 * moves the output; BENCH_NO_BUILD=1 keeps a stale library build.
 */
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs'
import { loadavg, tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { catalog } from './lib/catalog.js'
import { runConfig } from './lib/config.js'
import type { ContenderDef } from './lib/contender-defs.js'
import { ContenderPools } from './lib/contender-pools.js'
import { machineInfo } from './lib/machine.js'
import { redisBenchmark } from './lib/redis-benchmark.js'
import type { DefInfo, Results } from './lib/results.js'
import { ensureBuilt, openSession, type Session } from './lib/session.js'
import { keepNonFinite, restoreNonFinite } from './lib/stats.js'
import { renderReport } from './report/markdown.js'
import { runFlashSale, saleBackends } from './sections/flash-sale.js'
import { available, runMatrix } from './sections/matrix.js'
import { runScale } from './sections/scale.js'

const HERE = dirname(fileURLToPath(import.meta.url))
const ROOT = join(HERE, '..')
const cfg = runConfig()
const OUT = process.env.BENCH_OUT ?? (cfg.quick ? join(tmpdir(), 'latchkey-bench-quick') : HERE)
const t0 = performance.now()
const log = (line: string) =>
  process.stderr.write(`[bench ${((performance.now() - t0) / 1000).toFixed(0).padStart(4)} s] ${line}\n`)
const sections: Record<string, number> = {}

function write(results: Results): void {
  const { markdown, charts } = renderReport(results)
  mkdirSync(join(OUT, 'charts'), { recursive: true })
  writeFileSync(join(OUT, 'RESULTS.md'), markdown)
  for (const c of charts) writeFileSync(join(OUT, 'charts', c.file), c.svg)
  log(`wrote ${join(OUT, 'RESULTS.md')} and ${charts.length} charts`)
}

/** Runs `fn` when section `selectedBy` is selected, timing it as `name`. */
async function section<T>(name: string, fn: () => Promise<T>, selectedBy = name): Promise<T | undefined> {
  if (!cfg.sections.has(selectedBy)) return undefined
  const s0 = performance.now()
  try {
    return await fn()
  } finally {
    sections[name] = (performance.now() - s0) / 1000
  }
}

const info = (d: ContenderDef): DefInfo => ({
  id: d.id,
  label: d.label,
  tables: d.tables,
  waits: d.waits,
  crossProcess: d.crossProcess,
  maxWaiters: d.maxWaiters,
})

/** The contenders that open, and the matrix's cells (the Curator JVMs quit at its end). */
async function matrix(s: Session, defs: readonly ContenderDef[]) {
  const pools = new ContenderPools(s.pool, s.namespace)
  try {
    const { ok, skipped } = await available(pools, defs, s.namespace)
    for (const k of skipped) log(`skipped ${k.id}: ${k.reason}`)
    const cells = (await section('matrix', () => runMatrix(pools, ok, cfg.matrix, s.namespace, log))) ?? []
    return { ok, skipped, cells }
  } finally {
    await pools.close()
  }
}

/** Every selected section, in order. */
async function measure(
  s: Session,
): Promise<Omit<Results, 'sections' | 'totalSeconds' | 'loadAtEnd' | 'cleanupFailures'>> {
  const machine = await machineInfo(s.servers)
  const defs = catalog(s.servers).filter((d) => cfg.only === undefined || cfg.only.has(d.id))
  const { ok, skipped, cells } = await matrix(s, defs)
  const bench = await section(
    'redis-benchmark',
    async () => {
      const runs = []
      for (let i = 0; i < cfg.redisBenchmark.runs; i++)
        runs.push(await redisBenchmark(s.redis.port, cfg.redisBenchmark.requests))
      return runs.every((x) => x !== undefined) ? runs : undefined
    },
    'matrix',
  )
  const scaleDefs = ok.filter((d) => d.id === 'memory' || d.id === 'redis')
  const scale = await section('scale', () => runScale(s.pool, scaleDefs, cfg.scale, s.namespace, log))
  const backends = saleBackends(ok, s.servers, s.tmp)
  const sale = await section('sale', async () => {
    const dist = ensureBuilt(ROOT, log)
    const r = await runFlashSale(backends, { ...cfg.sale, redisUrl: s.redis.url }, log)
    const ran = backends.slice(0, cfg.sale.backends)
    return { ...r, dist, backends: ran.map(({ id, label, workers }) => ({ id, label, workers })) }
  })
  return {
    quick: cfg.quick,
    machine,
    matrixConfig: cfg.matrix,
    scaleConfig: cfg.scale,
    saleConfig: cfg.sale,
    defs: [...ok, ...defs.filter((d) => !ok.includes(d))].map(info),
    skipped,
    cells,
    ...(bench === undefined ? {} : { redisBenchmark: bench }),
    ...(scale === undefined ? {} : { scale }),
    ...(sale === undefined ? {} : { flashSale: sale }),
  }
}

async function main(): Promise<void> {
  if (process.argv.includes('--report-only')) {
    write(JSON.parse(readFileSync(join(OUT, 'results.jsonl'), 'utf8'), restoreNonFinite) as Results)
    return
  }
  log(`${cfg.quick ? 'quick' : 'full'} run; sections ${[...cfg.sections].join(', ')}; output ${OUT}`)
  const session = await openSession(ROOT, cfg.workers)
  const interrupted = () => void session.shutdown().finally(() => process.exit(130))
  process.once('SIGINT', interrupted)
  process.once('SIGTERM', interrupted)
  let measured: Awaited<ReturnType<typeof measure>>
  try {
    measured = await measure(session)
  } finally {
    await session.shutdown()
  }
  const results: Results = {
    ...measured,
    sections,
    totalSeconds: (performance.now() - t0) / 1000,
    loadAtEnd: loadavg()
      .map((l) => l.toFixed(2))
      .join(' '),
    cleanupFailures: await session.shutdown(),
  }
  mkdirSync(OUT, { recursive: true })
  writeFileSync(join(OUT, 'results.jsonl'), `${JSON.stringify(results, keepNonFinite)}\n`)
  write(results)
  log(`done in ${((performance.now() - t0) / 60_000).toFixed(1)} min`)
}

await main()
