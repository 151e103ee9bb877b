/**
 * The Redis handoff gap of latchkey beside the wake-one BLPOP prototype (lib/proto-blpop.ts), with the waiters in
 * one process and spread over four, in short cells interleaved round after round (contender order rotated), so
 * the drift of a shared machine hits them alike. Per cell and round: the handoff gap p50 (another waiter's
 * acquisition minus the previous holder's release call) and its ratio to the prototype's in the same round;
 * at the end the median [min-max] of each over the rounds. Starts a private redis-server.
 *
 *   npx tsx bench/redis-handoff.ts [rounds] [windowMs]      (defaults 5 2000)
 *
 * BENCH_BASELINE_DIST=<absolute path of another build's dist> adds that build as a contender (before and after a
 * change in one run); BENCH_WAITERS=10,100 and BENCH_PROCESSES=1,4 pick the cells. BENCH_SIDE_BY_SIDE=1 runs the
 * contenders of a cell at the same time instead of one after the other, each on its own workers and its own
 * private redis-server: on a loaded machine both then see the same load at every instant (each also adds a
 * little load to the other, and to all alike).
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { startRedisServer } from '../packages/latchkey/test/support/redis-server-process.js'
import { catalog, serversFromEnv } from './lib/catalog.js'
import { type CellFigures, contendedCell } from './lib/cells.js'
import { CONTENDED_RAMP_MS } from './lib/config.js'
import { runNamespace } from './lib/contender.js'
import type { ContenderDef } from './lib/contender-defs.js'
import { WorkerPool } from './lib/pool.js'
import { fmtSpread, spread } from './lib/stats.js'
import { runOrder } from './sections/matrix.js'

const [roundsArg, windowArg] = process.argv.slice(2)
const rounds = Number(roundsArg ?? 5)
const windowMs = Number(windowArg ?? 2_000)
const numbers = (v: string | undefined, d: number[]) => (v === undefined ? d : v.split(',').map(Number))
const waiterCounts = numbers(process.env.BENCH_WAITERS, [10, 100])
const processCounts = numbers(process.env.BENCH_PROCESSES, [1, 4])
const baselineDist = process.env.BENCH_BASELINE_DIST
const sideBySide = process.env.BENCH_SIDE_BY_SIDE === '1'
const contenders = baselineDist === undefined ? 2 : 3

const servers = await Promise.all(Array.from({ length: sideBySide ? contenders : 1 }, () => startRedisServer()))
const redis = servers[0] as (typeof servers)[number]
const tmp = mkdtempSync(join(tmpdir(), 'latchkey-handoff-'))
const namespace = runNamespace()
const perContender = Math.max(...processCounts)
const pool = await WorkerPool.start(sideBySide ? perContender * contenders : perContender)
const loads: string[] = []
const load = async () =>
  (await import('node:os'))
    .loadavg()
    .map((x) => x.toFixed(2))
    .join(' ')
try {
  // Side by side, contender i runs on servers[i].
  const on = (i: number) => catalog(serversFromEnv((servers[sideBySide ? i : 0] ?? redis).url, tmp))
  const redisDef = on(0).find((d) => d.id === 'redis') as ContenderDef
  const defs: ContenderDef[] = [redisDef, on(1).find((d) => d.id === 'proto-blpop') as ContenderDef]
  if (baselineDist !== undefined) {
    const base = on(2).find((d) => d.id === 'redis') as ContenderDef
    defs.push({
      ...base,
      id: 'redis-baseline',
      label: 'latchkey Redis, baseline build',
      spec: (ns, ttl, c) => ({ ...base.spec(ns, ttl, c), dist: baselineDist }),
    } as ContenderDef)
  }
  const figures = new Map<string, CellFigures[]>()
  loads.push(await load())
  for (let round = 0; round < rounds; round++) {
    for (const processes of processCounts) {
      for (const waiters of waiterCounts) {
        const cell = `${waiters}x${processes}`
        const byId = new Map<string, CellFigures>()
        const timing = { holdMs: 1, thinkMs: 5, rampMs: Math.max(CONTENDED_RAMP_MS, 2 * waiters) }
        const record = (def: ContenderDef, f: CellFigures) => {
          byId.set(def.id, f)
          const list = figures.get(`${cell} ${def.id}`) ?? []
          list.push(f)
          figures.set(`${cell} ${def.id}`, list)
        }
        await pool.heal()
        if (sideBySide) {
          const done = await Promise.all(
            defs.map((def, i) => {
              const place = {
                pool: pool.slice(i * perContender, perContender),
                namespace,
                key: `${def.id}:${cell}:r${round}`,
              }
              return contendedCell(place, def, waiters, windowMs, timing, processes)
            }),
          )
          for (const [i, def] of defs.entries()) record(def, done[i] as CellFigures)
        } else {
          for (const def of runOrder(defs, round)) {
            await pool.heal()
            const place = { pool, namespace, key: `${def.id}:${cell}:r${round}` }
            record(def, await contendedCell(place, def, waiters, windowMs, timing, processes))
          }
        }
        const floor = byId.get('proto-blpop')?.gapP50 ?? Number.NaN
        const parts = [...byId].map(
          ([id, f]) =>
            `${id} ${f.gapP50.toFixed(3)} (${(f.gapP50 / floor).toFixed(2)}x, ${Math.round(f.rate)}/s, overlaps ${f.overlaps}, starved ${f.starved})`,
        )
        process.stderr.write(`round ${round + 1} ${cell.padEnd(6)} ${parts.join(' | ')} load ${await load()}\n`)
      }
    }
  }
  loads.push(await load())
  console.log(
    `# Redis handoff gap p50, ms: median [min-max] of ${rounds} rounds, ${windowMs} ms windows${sideBySide ? ', contenders side by side' : ''}; load ${loads.join(' -> ')}\n`,
  )
  console.log('| cell | contender | gap p50 ms | gap p99 ms | x proto-blpop (per round) | acq/s | overlaps | starved |')
  console.log('| --- | --- | --- | --- | --- | --- | --- | --- |')
  for (const processes of processCounts) {
    for (const waiters of waiterCounts) {
      const cell = `${waiters}x${processes}`
      const floor = figures.get(`${cell} proto-blpop`) ?? []
      for (const def of defs) {
        const fs = figures.get(`${cell} ${def.id}`) ?? []
        const ratios = fs.map((f, i) => f.gapP50 / (floor[i]?.gapP50 ?? Number.NaN))
        const sum = (k: keyof CellFigures) => fs.reduce((s, f) => s + f[k], 0)
        console.log(
          `| ${waiters} waiters x ${processes} | ${def.id} | ${fmtSpread(spread(fs.map((f) => f.gapP50)))} | ${fmtSpread(spread(fs.map((f) => f.gapP99)))} | ${fmtSpread(spread(ratios))} | ${fmtSpread(spread(fs.map((f) => f.rate)))} | ${sum('overlaps')} | ${sum('starved')} |`,
        )
      }
    }
  }
} finally {
  await pool.close()
  for (const server of servers) await server.dispose()
  rmSync(tmp, { recursive: true, force: true })
}
