/**
 * latchkey's ZooKeeper mutex beside Apache Curator 5.4's InterProcessMutex (a Java program, lib/curator-bench.ts)
 * on the same ZooKeeper in the same run: standalone and 3-node ensemble, uncontended at concurrency 1 and 20 and
 * 10 waiters on one lock. Each run alternates the two (the order reversed every other run); the tables give the
 * median [min–max] over the runs and the ratio latchkey/Curator of each run.
 *
 *   bash scripts/servers/zookeeper.sh start && bash scripts/servers/zookeeper.sh start-ensemble
 *   npx tsx bench/zookeeper-curator.ts   (BENCH_QUICK=1: one short run; BENCH_CONCURRENCY / BENCH_WAITERS as in
 *   lib/config.ts; LATCHKEY_ZK_URL / LATCHKEY_ZK_ENSEMBLE_PORTS pick the servers; a target not serving is skipped)
 *
 * The waiters cell spreads latchkey's waiters over 4 Node processes and Curator's over 4 clients in its one JVM.
 * "N waiters, one process each" (BENCH_WAITERS_ONE_PROCESS, default 10; `-` for none) runs latchkey's in one
 * process too, over 4 backends (sessions), so both contenders have the same layout; Curator's figures are the same
 * JVM's in both cells.
 *
 * Requests per acquisition are counted by the server (its `mntr` write and read counters over the window, which
 * treat both clients alike): exact only on a server nobody else uses meanwhile, so point the bench at a private one
 * for those figures. latchkey's own count (its client's requests, pings excluded) is shown beside them.
 *
 * BENCH_BASELINE_DIST=<folder>: a third contender, another build of latchkey (e.g. a copy of packages/latchkey/dist
 * built before a change, kept inside packages/latchkey so it finds the same node_modules), run alternating with the
 * other two; its rows read "(baseline)", so a change is compared with the code before it in the same run.
 *
 * The floor (rows "(floor: …)"; BENCH_ZK_FLOOR=0 leaves it out): Curator's recipe on the bare wire protocol in the
 * same Node workers and layouts as latchkey (lib/zk-recipe-floor.ts), the least any Node lock can spend. A cell where
 * Curator is ahead of the floor as well is one no Node client can win in that layout.
 */
import path from 'node:path'
import { cleanupNamespace } from '../packages/latchkey/test/support/zookeeper-env.js'
import { analyse } from './lib/analysis.js'
import type { ContenderSpec } from './lib/contender.js'
import { CuratorBench } from './lib/curator-bench.js'
import type { ContendedResult, UncontendedResult } from './lib/modes.js'
import { WorkerPool } from './lib/pool.js'
import { fmtAuto, fmtSpread, hostNow, sleep, spread } from './lib/stats.js'
import { type ZkRequestCounters, zkRequestCounters, zkServing } from './lib/zk-mntr.js'
import { zkTargets } from './lib/zk-targets.js'

const env = process.env
const quick = env.BENCH_QUICK === '1'
const RUNS = quick ? 1 : 3
const UNCONTENDED_MS = quick ? 400 : 1_500
const CONTENDED_MS = quick ? 800 : 2_500
const RAMP_MS = 800
const HOLD_MS = 1
const THINK_MS = 5
const PROCESSES = 4
const list = (v: string | undefined, d: number[]) =>
  v === undefined || v === '' ? d : v === '-' ? [] : v.split(',').map(Number)
const concurrencies = list(env.BENCH_CONCURRENCY, [1, 20])
const waiterCounts = list(env.BENCH_WAITERS, [10])
const oneProcessCounts = list(env.BENCH_WAITERS_ONE_PROCESS, [10])
const baselineDist = env.BENCH_BASELINE_DIST === undefined ? undefined : path.resolve(env.BENCH_BASELINE_DIST)
/** Node contenders besides latchkey: the baseline build when given, the floor unless BENCH_ZK_FLOOR=0. */
const extraSides: ('baseline' | 'floor')[] = [
  ...(baselineDist === undefined ? [] : (['baseline'] as const)),
  ...(env.BENCH_ZK_FLOOR === '0' ? [] : (['floor'] as const)),
]

const targets = zkTargets(env)

/** What one contender did in one cell. */
interface Figures {
  /** Pairs/s (uncontended) or acquisitions/s (contended). */
  readonly rate: number
  readonly gapP50: number
  readonly overlaps: number
  /** Per acquisition, as the servers counted them (NaN when unknown). */
  readonly writes: number
  readonly requests: number
  /** Per acquisition, as latchkey's client counted them (NaN for Curator). */
  readonly clientRequests: number
  readonly cpuMsPerOp: number
  /**
   * The role (leader, follower, standalone) and port of the member that served most of the window's reads: the one an
   * uncontended cell's single session talks to (a read is served by the member the session is connected to).
   */
  readonly member: string
}

type Side = 'latchkey' | 'curator' | 'baseline' | 'floor'
/** `p`: waiters as `w`, but latchkey's all in one process (over as many sessions as Curator's JVM has clients). */
type Scenario = { kind: 'c' | 'w' | 'p'; n: number }

type MemberCounters = ZkRequestCounters & { readonly members: { reads: number; state: string }[] }

async function counters(connect: string): Promise<MemberCounters> {
  const all = await Promise.all(connect.split(',').map((h) => zkRequestCounters(h)))
  return {
    writes: all.reduce((s, c) => s + c.writes, 0),
    reads: all.reduce((s, c) => s + c.reads, 0),
    members: all.map((c) => ({ reads: c.reads, state: c.state })),
  }
}

/** Server counters from `startAt` to `endAt` (read at those instants), and the member serving most reads meanwhile. */
async function windowCounters(
  connect: string,
  startAt: number,
  endAt: number,
): Promise<ZkRequestCounters & { member: string }> {
  await sleep(Math.max(0, startAt - hostNow()))
  const from = await counters(connect)
  await sleep(Math.max(0, endAt - hostNow()))
  const to = await counters(connect)
  const reads = to.members.map((m, i) => m.reads - (from.members[i]?.reads ?? 0))
  const busiest = reads.indexOf(Math.max(...reads))
  const member = `${to.members[busiest]?.state ?? '?'} ${connect.split(',')[busiest]?.split(':')[1] ?? '?'}`
  return { writes: to.writes - from.writes, reads: to.reads - from.reads, member }
}

async function runCell(
  side: Side,
  sc: Scenario,
  target: { connect: string },
  pool: WorkerPool,
  curator: CuratorBench,
  key: string,
): Promise<Figures> {
  const sessions = sc.kind === 'p' ? { sessions: PROCESSES } : {}
  const spec: ContenderSpec =
    side === 'floor'
      ? { type: 'floor', floor: 'zk-recipe', url: target.connect, namespace: key, ttlMs: 10_000, ...sessions }
      : {
          type: 'latchkey',
          url: `zookeeper://${target.connect}`,
          namespace: key,
          ttlMs: 10_000,
          ...(side === 'baseline' && baselineDist !== undefined ? { dist: baselineDist } : {}),
          ...sessions,
        }
  // The baseline (another build of latchkey) and the floor run in the Node workers, as latchkey does.
  const node = side !== 'curator'
  // latchkey's client counts its own requests (the baseline's too); the floor's and Curator's do not.
  const counted = side === 'latchkey' || side === 'baseline'
  if (sc.kind === 'c') {
    if (node) await pool.request(0, { op: 'open', spec })
    try {
      const startAt = hostNow() + 50
      const endAt = startAt + UNCONTENDED_MS
      const run: Promise<UncontendedResult> = node
        ? pool.request(0, { op: 'uncontended', concurrency: sc.n, keyPrefix: `${key}:u`, startAt, endAt })
        : curator.uncontended(sc.n, startAt, endAt)
      const [r, c] = await Promise.all([run, windowCounters(target.connect, startAt, endAt)])
      return {
        rate: r.ops / r.seconds,
        gapP50: Number.NaN,
        overlaps: 0,
        writes: c.writes / r.ops,
        requests: (c.writes + c.reads) / r.ops,
        clientRequests: counted ? r.clientCmds / r.ops : Number.NaN,
        cpuMsPerOp: r.cpuMs / r.ops,
        member: c.member,
      }
    } finally {
      if (node) await pool.request(0, { op: 'close' })
    }
  }
  const processes = sc.kind === 'p' ? 1 : Math.min(PROCESSES, sc.n)
  const share = (i: number) => Math.floor(sc.n / processes) + (i < sc.n % processes ? 1 : 0)
  if (node) await pool.all(processes, () => ({ op: 'open', spec }))
  try {
    const startAt = hostNow() + 50
    const measureFrom = startAt + RAMP_MS
    const endAt = measureFrom + CONTENDED_MS
    const w = { startAt, measureFrom, endAt, holdMs: HOLD_MS, thinkMs: THINK_MS }
    let first = 0
    const firstIds = Array.from({ length: processes }, (_, i) => {
      const id = first
      first += share(i)
      return id
    })
    const run: Promise<ContendedResult[]> = node
      ? pool.all<ContendedResult>(processes, (i) => ({
          op: 'contended',
          waiters: share(i),
          firstId: firstIds[i] as number,
          key: `${key}:w`,
          ...w,
        }))
      : curator.contended(sc.n, w).then((r) => [r])
    const [parts, c] = await Promise.all([run, windowCounters(target.connect, measureFrom, endAt)])
    const f = analyse(
      parts.map((p) => p.intervals),
      sc.n,
    )
    const ops = f.acquisitions
    return {
      rate: ops / (CONTENDED_MS / 1000),
      gapP50: f.gapP50,
      overlaps: f.overlaps,
      writes: c.writes / ops,
      requests: (c.writes + c.reads) / ops,
      clientRequests: counted ? parts.reduce((s, p) => s + p.clientCmds, 0) / ops : Number.NaN,
      cpuMsPerOp: parts.reduce((s, p) => s + p.cpuMs, 0) / ops,
      member: c.member,
    }
  } finally {
    if (node) await pool.all(processes, () => ({ op: 'close' }))
  }
}

const scenarios: Scenario[] = [
  ...concurrencies.map((n) => ({ kind: 'c' as const, n })),
  ...waiterCounts.map((n) => ({ kind: 'w' as const, n })),
  ...oneProcessCounts.map((n) => ({ kind: 'p' as const, n })),
]
const stamp = `lkcur-${process.pid}`
console.log(
  `# latchkey ZooKeeper beside Apache Curator 5.4 InterProcessMutex\n\n${new Date().toISOString()}, Node ${process.version}; median [min–max] of ${RUNS} run(s), alternating; hold ${HOLD_MS} ms, think ${THINK_MS} ms; ratio = latchkey / Curator per run (gap: Curator / latchkey, so > 1 is latchkey ahead)`,
)
const pool = await WorkerPool.start(PROCESSES)
try {
  for (const target of targets) {
    if (!(await zkServing(target.connect))) {
      console.log(`\n- skipped ${target.id} (${target.connect}): not serving`)
      continue
    }
    const curator = await CuratorBench.start(target.connect, `/${stamp}`, PROCESSES)
    const figures = new Map<string, Figures[]>()
    try {
      for (let run = 0; run < RUNS; run++) {
        for (const sc of scenarios) {
          const sides: Side[] = ['latchkey', ...extraSides, 'curator']
          const order = run % 2 === 0 ? sides : [...sides].reverse()
          for (const side of order) {
            const id = `${sc.kind}${sc.n}`
            const f = await runCell(side, sc, target, pool, curator, `${stamp}-${id}-r${run}`)
            const k = `${side}:${id}`
            figures.set(k, [...(figures.get(k) ?? []), f])
            const gap =
              sc.kind !== 'c' ? ` gap p50 ${fmtAuto(f.gapP50)} ms overlaps ${f.overlaps}` : ` on the ${f.member}`
            process.stderr.write(
              `${target.id} run ${run + 1} ${id} ${side}: ${Math.round(f.rate)}/s${gap} req/op ${fmtAuto(f.requests)} writes/op ${fmtAuto(f.writes)}\n`,
            )
          }
        }
      }
    } finally {
      await curator.close()
      // latchkey's lock nodes of this run (its namespaces all start with the stamp).
      await cleanupNamespace(target.connect, stamp)
    }
    console.log(`\n## ${target.id} (${target.connect})\n`)
    console.log(
      '| cell | figure | latchkey | Curator | ratio | requests/acq latchkey (client) | Curator | writes/acq latchkey | Curator | client CPU ms/acq latchkey | Curator |',
    )
    console.log('| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |')
    for (const [sc, side] of scenarios.flatMap((sc) =>
      (['latchkey', ...extraSides] as const).map((side) => [sc, side] as const),
    )) {
      const id = `${sc.kind}${sc.n}`
      const l = figures.get(`${side}:${id}`) ?? []
      const c = figures.get(`curator:${id}`) ?? []
      const pick = (xs: Figures[], f: (x: Figures) => number) => fmtSpread(spread(xs.map(f)))
      const ratio = (f: (x: Figures) => number, invert: boolean) =>
        fmtSpread(
          spread(l.map((x, i) => (invert ? f(c[i] as Figures) / f(x) : f(x) / f(c[i] as Figures)))),
          (n) => `${n.toFixed(2)}x`,
        )
      const common = [
        `${pick(l, (x) => x.requests)} (${pick(l, (x) => x.clientRequests)})`,
        pick(c, (x) => x.requests),
        pick(l, (x) => x.writes),
        pick(c, (x) => x.writes),
        pick(l, (x) => x.cpuMsPerOp),
        pick(c, (x) => x.cpuMsPerOp),
      ]
      const name = `${sc.kind === 'c' ? `uncontended c=${sc.n}` : sc.kind === 'p' ? `${sc.n} waiters, one process each` : `${sc.n} waiters`}${side === 'baseline' ? ' (baseline)' : side === 'floor' ? " (floor: Curator's recipe on the bare protocol)" : ''}`
      if (sc.kind === 'c') {
        const rate = [pick(l, (x) => x.rate), pick(c, (x) => x.rate), ratio((x) => x.rate, false)]
        console.log(`| ${name} | pairs/s | ${[...rate, ...common].join(' | ')} |`)
      } else {
        const gap = [pick(l, (x) => x.gapP50), pick(c, (x) => x.gapP50), ratio((x) => x.gapP50, true)]
        console.log(`| ${name} | gap p50 ms | ${[...gap, ...common].join(' | ')} |`)
        const rate = [pick(l, (x) => x.rate), pick(c, (x) => x.rate), ratio((x) => x.rate, false)]
        const overlaps = l.reduce((s, x) => s + x.overlaps, 0) + c.reduce((s, x) => s + x.overlaps, 0)
        console.log(`| ${name} | acq/s (overlaps: ${overlaps}) | ${rate.join(' | ')} | | | | | | |`)
      }
    }
    // On an ensemble a session's member decides much of an uncontended pair's time (a write through a follower is
    // forwarded to the leader); each side picks its member at random.
    if (target.connect.includes(',')) {
      for (const sc of scenarios.filter((x) => x.kind === 'c')) {
        const id = `${sc.kind}${sc.n}`
        const runs = (side: Side) => (figures.get(`${side}:${id}`) ?? []).map((x) => x.member).join(', ')
        console.log(
          `\n- uncontended c=${sc.n}, the member serving each run's reads: latchkey ${runs('latchkey')}; Curator ${runs('curator')}`,
        )
      }
    }
  }
} finally {
  await pool.close()
}
