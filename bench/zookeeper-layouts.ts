/**
 * The 10-waiter ZooKeeper handoff of latchkey and Apache Curator 5.4's InterProcessMutex in both process layouts,
 * alternating in the same run: latchkey over 4 Node processes (one session each) and in one process over 4 sessions;
 * Curator in one JVM over 4 sessions (the main bench's layout) and over 4 JVMs (one session each). It tells what the
 * layout costs each client apart from what the client itself costs.
 *
 *   npx tsx bench/zookeeper-layouts.ts   (LATCHKEY_ZK_URL / LATCHKEY_ZK_ENSEMBLE_PORTS pick the servers;
 *   BENCH_RUNS (3), BENCH_WINDOW_MS (1500), BENCH_WAITERS (10); BENCH_BASELINE_DIST adds another latchkey build)
 *
 * Per acquisition, counted by the servers (mntr, summed over the members; point it at servers nobody else uses):
 * requests, writes, and notifications (packets sent minus packets received: every request, ping included, gets
 * one reply, so the rest are watch events).
 */
import path from 'node:path'
import { cleanupNamespace } from '../packages/latchkey/test/support/zookeeper-env.js'
import { analyse } from './lib/analysis.js'
import { CuratorBench } from './lib/curator-bench.js'
import type { ContendedResult } from './lib/modes.js'
import { WorkerPool } from './lib/pool.js'
import { fmtAuto, fmtSpread, hostNow, sleep, spread } from './lib/stats.js'
import { zkPacketCounters, zkServing } from './lib/zk-mntr.js'
import { zkTargets } from './lib/zk-targets.js'

const env = process.env
const RUNS = Number(env.BENCH_RUNS ?? 3)
const WINDOW_MS = Number(env.BENCH_WINDOW_MS ?? 1_500)
const WAITERS = Number(env.BENCH_WAITERS ?? 10)
const RAMP_MS = 800
const PROCESSES = 4
const baselineDist = env.BENCH_BASELINE_DIST === undefined ? undefined : path.resolve(env.BENCH_BASELINE_DIST)
const targets = zkTargets(env).filter(
  (t) => env.BENCH_TARGETS === undefined || env.BENCH_TARGETS.split(',').some((x) => t.id.startsWith(x)),
)

type Layout = 'latchkey 4 processes' | 'latchkey 1 process' | 'Curator 1 JVM' | 'Curator 4 JVMs' | string
interface Figures {
  gapP50: number
  gapP99: number
  /** The longest time nobody held the lock in the window, ms. */
  longestIdle: number
  rate: number
  requests: number
  writes: number
  notifications: number
  cpuMs: number
}

/** The longest stretch between one holder's release call and the next acquisition (flat [at, released, id]). */
function longestIdle(parts: readonly (readonly number[])[]): number {
  const all: [number, number][] = []
  for (const flat of parts) for (let i = 0; i + 2 < flat.length; i += 3) all.push([flat[i] ?? 0, flat[i + 1] ?? 0])
  all.sort((a, b) => a[0] - b[0])
  let longest = 0
  for (let i = 1; i < all.length; i++) longest = Math.max(longest, (all[i]?.[0] ?? 0) - (all[i - 1]?.[1] ?? 0))
  return longest
}

const share = (i: number, n: number) => Math.floor(WAITERS / n) + (i < WAITERS % n ? 1 : 0)
const firstId = (i: number, n: number) => Array.from({ length: i }, (_, j) => share(j, n)).reduce((s, x) => s + x, 0)

/** Sums the servers' packet and request counters over the members of `connect`. */
async function counters(connect: string) {
  const all = await Promise.all(connect.split(',').map((h) => zkPacketCounters(h)))
  const sum = (f: (c: (typeof all)[number]) => number) => all.reduce((s, c) => s + f(c), 0)
  return {
    writes: sum((c) => c.writes),
    reads: sum((c) => c.reads),
    sent: sum((c) => c.sent),
    recv: sum((c) => c.received),
  }
}

async function runCell(
  layout: Layout,
  connect: string,
  pool: WorkerPool,
  jvm1: CuratorBench,
  jvm4: CuratorBench[],
  key: string,
): Promise<Figures> {
  const startAt = hostNow() + 50
  const measureFrom = startAt + RAMP_MS
  const endAt = measureFrom + WINDOW_MS
  const w = { startAt, measureFrom, endAt, holdMs: 1, thinkMs: 5 }
  const latchkey = !layout.startsWith('Curator')
  const oneProcess = layout.includes('1 process')
  const processes = oneProcess ? 1 : PROCESSES
  const spec = {
    type: 'latchkey' as const,
    url: `zookeeper://${connect}`,
    namespace: key,
    ttlMs: 10_000,
    ...(oneProcess ? { sessions: PROCESSES } : {}),
    ...(layout.includes('baseline') && baselineDist !== undefined ? { dist: baselineDist } : {}),
  }
  if (latchkey) await pool.all(processes, () => ({ op: 'open', spec }))
  try {
    let run: Promise<ContendedResult[]>
    if (latchkey) {
      run = pool.all<ContendedResult>(processes, (i) => ({
        op: 'contended',
        waiters: oneProcess ? WAITERS : share(i, processes),
        firstId: oneProcess ? 0 : firstId(i, processes),
        key: `${key}:w`,
        ...w,
      }))
    } else if (layout === 'Curator 1 JVM') {
      run = jvm1.contended(WAITERS, w).then((r) => [r])
    } else {
      // Each JVM numbers its waiters from 0: renumbered after the others' (the intervals are [at, released, id]).
      run = Promise.all(jvm4.map((j, i) => j.contended(share(i, jvm4.length), w))).then((parts) =>
        parts.map((p, i) => ({
          ...p,
          intervals: p.intervals.map((v, k) => (k % 3 === 2 ? v + firstId(i, jvm4.length) : v)),
        })),
      )
    }
    const window = (async () => {
      await sleep(Math.max(0, measureFrom - hostNow()))
      const from = await counters(connect)
      await sleep(Math.max(0, endAt - hostNow()))
      const to = await counters(connect)
      return {
        writes: to.writes - from.writes,
        reads: to.reads - from.reads,
        notes: to.sent - from.sent - (to.recv - from.recv),
      }
    })()
    const [parts, c] = await Promise.all([run, window])
    const giveUps = parts.reduce((s, p) => s + p.giveUps, 0)
    if (giveUps > 0) process.stderr.write(`${layout}: ${giveUps} waits timed out\n`)
    const f = analyse(
      parts.map((p) => p.intervals),
      WAITERS,
    )
    const ops = f.acquisitions
    return {
      gapP50: f.gapP50,
      gapP99: f.gapP99,
      longestIdle: longestIdle(parts.map((p) => p.intervals)),
      rate: ops / (WINDOW_MS / 1000),
      requests: (c.writes + c.reads) / ops,
      writes: c.writes / ops,
      notifications: c.notes / ops,
      cpuMs: parts.reduce((s, p) => s + p.cpuMs, 0) / ops,
    }
  } finally {
    if (latchkey) await pool.all(processes, () => ({ op: 'close' }))
  }
}

const layouts: Layout[] = [
  'latchkey 4 processes',
  'latchkey 1 process',
  ...(baselineDist === undefined ? [] : ['latchkey 4 processes (baseline)', 'latchkey 1 process (baseline)']),
  'Curator 1 JVM',
  'Curator 4 JVMs',
].filter((l) => env.BENCH_LAYOUTS === undefined || env.BENCH_LAYOUTS.split(',').some((x) => l.startsWith(x)))
const stamp = `lklay-${process.pid}`
console.log(
  `# ZooKeeper ${WAITERS}-waiter handoff by process layout\n\n${new Date().toISOString()}; ${RUNS} alternating runs of ${WINDOW_MS} ms; hold 1 ms, think 5 ms; median [min–max]`,
)
const pool = await WorkerPool.start(PROCESSES)
try {
  for (const target of targets) {
    // Curator's client start throws for a server that does not answer: such a target is skipped, as in the main bench.
    if (!(await zkServing(target.connect))) {
      console.log(`\n- skipped ${target.id} (${target.connect}): not serving`)
      continue
    }
    const jvm1 = await CuratorBench.start(target.connect, `/${stamp}-j1`, PROCESSES)
    const jvm4 = await Promise.all(
      Array.from({ length: PROCESSES }, () => CuratorBench.start(target.connect, `/${stamp}-j4`, 1)),
    )
    const figures = new Map<Layout, Figures[]>()
    try {
      for (let run = 0; run < RUNS; run++) {
        const order = run % 2 === 0 ? layouts : [...layouts].reverse()
        for (const layout of order) {
          const f = await runCell(layout, target.connect, pool, jvm1, jvm4, `${stamp}-r${run}`)
          figures.set(layout, [...(figures.get(layout) ?? []), f])
          process.stderr.write(
            `${target.id} run ${run + 1} ${layout}: gap p50 ${fmtAuto(f.gapP50)} p99 ${fmtAuto(f.gapP99)} longest idle ${fmtAuto(f.longestIdle)} ms, ${Math.round(f.rate)}/s, req ${fmtAuto(f.requests)} notes ${fmtAuto(f.notifications)} cpu ${fmtAuto(f.cpuMs)}\n`,
          )
        }
      }
    } finally {
      await Promise.all([jvm1, ...jvm4].map((j) => j.close().catch(() => undefined)))
      await cleanupNamespace(target.connect, stamp)
    }
    console.log(`\n## ${target.id} (${target.connect})\n`)
    console.log(
      '| layout | gap p50 ms | gap p99 ms | acq/s | requests/acq | writes/acq | notifications/acq | client CPU ms/acq |\n| --- | --- | --- | --- | --- | --- | --- | --- |',
    )
    for (const layout of layouts) {
      const xs = figures.get(layout) ?? []
      const col = (f: (x: Figures) => number) => fmtSpread(spread(xs.map(f)))
      console.log(
        `| ${layout} | ${col((x) => x.gapP50)} | ${col((x) => x.gapP99)} | ${col((x) => x.rate)} | ${col((x) => x.requests)} | ${col((x) => x.writes)} | ${col((x) => x.notifications)} | ${col((x) => x.cpuMs)} |`,
      )
    }
  }
} finally {
  await pool.close()
}
