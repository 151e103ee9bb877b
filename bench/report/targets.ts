/**
 * The performance targets, each as one row computed from the run: latchkey's figure, the peer's or floor's in
 * the same run, their ratio (median [min–max] of the per-run ratios, so load drift between runs cancels), the
 * target, and whether the median meets it. A target whose contender did not run says so instead of passing.
 */
import type { CellFigures } from '../lib/cells.js'
import type { Results } from '../lib/results.js'
import { fmtAuto, fmtSpread } from '../lib/stats.js'
import { med, type Summaries } from './aggregate.js'
import { etcdFloorLines, redisFloorLines, zkFloorLines } from './floor-lines.js'
import { bestPeer, ofCeiling } from './sections.js'
import { ratioText, sameRunRatio, table } from './tables.js'

/** How a row compares: ours over theirs must reach `min`, or ours over theirs must stay under `max`. */
type Goal = { readonly min: number } | { readonly max: number }

interface Target {
  readonly cell: string
  readonly figure: string
  readonly ours: string
  readonly theirs: string
  readonly scenario: string
  readonly f: keyof CellFigures
  readonly goal: Goal
  /** Another condition of the row, checked on latchkey's cells (e.g. no starved waiter). */
  readonly also?: { readonly text: string; readonly holds: (s: Summaries) => boolean }
  /**
   * The floor of latchkey's recipe for the cell (the same requests with no library, in the same workers): a target it
   * misses too in the same run is one no lock of that recipe meets on that host, which the verdict says.
   */
  readonly floor?: string
}

function targets(s: Summaries): Target[] {
  const rate = (cell: string, ours: string, theirs: string, scenario: string, min: number): Target => ({
    cell,
    figure: scenario.startsWith('c') ? 'pairs/s' : 'acq/s',
    ours,
    theirs,
    scenario,
    f: 'rate',
    goal: { min },
  })
  const gap = (cell: string, ours: string, theirs: string, scenario: string, max: number): Target => ({
    cell,
    figure: 'handoff gap p50 ms',
    ours,
    theirs,
    scenario,
    f: 'gapP50',
    goal: { max },
  })
  const unstarved = (id: string, scenario: string) => ({
    text: 'no waiter starved',
    holds: (x: Summaries) => med(x, id, scenario, 'starved') === 0,
  })
  const cpuUnder = (id: string, scenario: string, ms: number) => ({
    text: `client CPU < ${ms} ms per acquisition`,
    holds: (x: Summaries) => med(x, id, scenario, 'cpuPer1k') < ms * 1_000,
  })
  const zk = (ours: string, theirs: string, where: string, floor: string): Target[] => [
    { ...rate(`ZooKeeper ${where}, uncontended c=1`, ours, theirs, 'c1', 1), floor },
    { ...rate(`ZooKeeper ${where}, uncontended c=50`, ours, theirs, 'c50', 1), floor },
    { ...gap(`ZooKeeper ${where}, 10 waiters`, ours, theirs, 'w10', 1), floor },
    // Curator's layout: its JVM runs the 10 waiters over 4 sessions in one process.
    {
      ...gap(`ZooKeeper ${where}, 10 waiters in one process (4 sessions)`, `${ours}-1p`, theirs, 'w10', 1),
      floor: `${floor}-1p`,
    },
  ]
  return [
    {
      ...rate('Redis uncontended c=1', 'redis', bestPeer(s, 'c1') ?? 'redis-semaphore', 'c1', 1),
      floor: 'redis-fenced',
    },
    {
      ...rate('Redis uncontended c=50', 'redis', bestPeer(s, 'c50') ?? 'redis-semaphore', 'c50', 1),
      floor: 'redis-fenced',
    },
    gap('Redis handoff, 10 waiters over 4 processes', 'redis', 'proto-blpop', 'w10', 1.1),
    gap('Redis handoff, 100 waiters over 4 processes', 'redis', 'proto-blpop', 'w100', 1.1),
    gap('Redis handoff, 10 waiters in one process', 'redis-1p', 'proto-blpop-1p', 'w10', 1.1),
    gap('Redis handoff, 100 waiters in one process', 'redis-1p', 'proto-blpop-1p', 'w100', 1.1),
    // Like for like (the same five nodes), and against the same library on one Redis, the figure the target
    // was first set against.
    { ...rate('RedLock, 1,000 waiters', 'redlock', 'redlock5-5', 'w1000', 1), also: unstarved('redlock', 'w1000') },
    {
      ...rate('RedLock, 1,000 waiters, against one Redis', 'redlock', 'redlock5', 'w1000', 1),
      also: unstarved('redlock', 'w1000'),
    },
    {
      ...rate('MariaDB `table`, 1,000 waiters', 'mariadb-table', 'mariadb-get_lock', 'w1000', 0.5),
      also: {
        text: 'client CPU per acquisition within 2x of get_lock',
        holds: (x) =>
          med(x, 'mariadb-table', 'w1000', 'cpuPer1k') <= 2 * med(x, 'mariadb-get_lock', 'w1000', 'cpuPer1k'),
      },
    },
    ...zk('zk', 'curator', 'standalone', 'zk-floor'),
    ...zk('zk3', 'curator3', '3-node ensemble', 'zk3-floor'),
    rate('etcd uncontended c=1', 'etcd', 'etcd-txn', 'c1', 0.9),
    { ...gap('etcd, 10 waiters', 'etcd', 'zk', 'w10', 1), also: cpuUnder('etcd', 'w10', 1), floor: 'etcd-floor' },
    { ...gap('etcd, 100 waiters', 'etcd', 'zk', 'w100', 1), also: cpuUnder('etcd', 'w100', 1), floor: 'etcd-floor' },
  ]
}

const goalText = (g: Goal) => ('min' in g ? `≥ ${g.min}×` : `≤ ${g.max}×`)
const meets = (g: Goal, ratio: number) => ('min' in g ? ratio >= g.min : ratio <= g.max)

/** ", the floor misses it too (ratio)" when the cell's floor ran and its own ratio misses the target; else "". */
function floorMisses(r: Results, t: Target): string {
  if (t.floor === undefined) return ''
  const ratio = sameRunRatio(r.cells, t.floor, t.theirs, t.scenario, t.f)
  if (ratio.n === 0 || meets(t.goal, ratio.median)) return ''
  return `; its recipe's floor misses it too (${ratioText(ratio)})`
}

/** The targets table, then one line per flash-sale strategy as a fraction of the machine's HTTP ceiling. */
export function targetsSection(r: Results, s: Summaries, labels: ReadonlyMap<string, string>): string[] {
  const name = (id: string) => labels.get(id) ?? id
  const rows = targets(s).map((t) => {
    const ratio = sameRunRatio(r.cells, t.ours, t.theirs, t.scenario, t.f)
    // An infinite ratio is a measurement too: the other contender made no acquisition at all.
    const ran = ratio.n > 0 || ratio.median === Number.POSITIVE_INFINITY
    const met = ran && meets(t.goal, ratio.median)
    const also = t.also === undefined ? true : t.also.holds(s)
    const verdict = !ran ? 'not measured' : met && also ? 'met' : `**not met**${met ? '' : floorMisses(r, t)}`
    return [
      t.cell,
      t.figure,
      fmtAuto(med(s, t.ours, t.scenario, t.f)),
      `${fmtAuto(med(s, t.theirs, t.scenario, t.f))} (${name(t.theirs)})`,
      ran ? ratioText(ratio) : '–',
      `${goalText(t.goal)}${t.also === undefined ? '' : `, ${t.also.text}${ran ? (also ? ' (yes)' : ' (no)') : ''}`}`,
      verdict,
    ]
  })
  const out = [
    "Each target of the performance round, from this run: the ratio is latchkey over the other contender, run by run (median [min–max]); a gap target is met when latchkey's gap is at most the bound times the other's, a rate target when latchkey's rate is at least the bound times the other's. A cell not met says so when the floor of latchkey's recipe (the same requests with no library, in the same workers: the tables below) missed the target too in this run: no lock of that recipe met it on this host then.",
    '',
    table(['cell', 'figure', 'latchkey', 'same run', 'ratio', 'target', 'verdict'], rows),
    '',
  ]
  out.push(...redisFloorLines(r, s), ...zkFloorLines(r, s), ...etcdFloorLines(r, s))
  const sale = r.flashSale
  if (sale !== undefined) {
    for (const b of sale.backends) {
      const shares = ['lock', 'sharded', 'db-atomic']
        .map((st) => [st, ofCeiling(sale.records, b.id, st)] as const)
        .filter(([, x]) => x.n > 0)
        .map(([st, x]) => `${st} ${fmtSpread(x, (n) => n.toFixed(2))}`)
      if (shares.length > 0)
        out.push(`- Flash-sale on ${b.label}, orders/s as a fraction of the HTTP ceiling: ${shares.join(', ')}.`)
    }
    out.push('')
  }
  return out
}
