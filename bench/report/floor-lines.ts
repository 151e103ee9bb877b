/**
 * Target cells beside their floors: the same recipe with no library, in the same workers, run by run. Where a floor
 * itself misses a target, no lock of that recipe can meet it on the host of the run.
 */
import type { Results } from '../lib/results.js'
import { fmtAuto } from '../lib/stats.js'
import { med, type Summaries } from './aggregate.js'
import { bestPeer } from './sections.js'
import { ratioText, sameRunRatio, table } from './tables.js'

/**
 * The uncontended Redis target cells beside the fenced floor (bench/lib/redis-layer-contenders.ts: one script that
 * takes a token and sets the lock, one that deletes it if it still holds the token): the least any lock with fencing
 * tokens and an owner-checked release sends per pair. Where that floor does not beat the best peer, no lock with
 * those guarantees can meet the target on the host of the run.
 */
export function redisFloorLines(r: Results, s: Summaries): string[] {
  const rows: string[][] = []
  for (const [cell, scenario] of [
    ['uncontended c=1', 'c1'],
    ['uncontended c=50', 'c50'],
  ] as const) {
    const peer = bestPeer(s, scenario) ?? 'redis-semaphore'
    const floorVsPeer = sameRunRatio(r.cells, 'redis-fenced', peer, scenario, 'rate')
    if (floorVsPeer.n === 0) continue
    rows.push([
      `Redis ${cell}`,
      fmtAuto(med(s, 'redis', scenario, 'rate')),
      fmtAuto(med(s, 'redis-fenced', scenario, 'rate')),
      `${fmtAuto(med(s, peer, scenario, 'rate'))} (${peer})`,
      ratioText(floorVsPeer),
      ratioText(sameRunRatio(r.cells, 'redis', 'redis-fenced', scenario, 'rate')),
    ])
  }
  if (rows.length === 0) return []
  return [
    'The uncontended Redis cells beside the fenced floor: one script that takes a token (INCR) and sets the lock (SET NX PX), one that deletes the lock if it still holds that token, sent through ioredis with no library (bench/lib/redis-layer-contenders.ts). It is the least any lock with fencing tokens and an owner-checked release sends per pair; the peers have no fencing token. Ratios are run by run; where the floor is not ahead of the best peer, no fenced lock can meet that target on this host.',
    '',
    table(['cell', 'latchkey pairs/s', 'fenced floor', 'best peer', 'floor ÷ best peer', 'latchkey ÷ floor'], rows),
    '',
  ]
}

/**
 * The ZooKeeper target cells beside their floor, Curator's recipe on the bare protocol in latchkey's layouts (no
 * library, no lease, no token): where the floor does not beat Curator either, no Node lock can meet that target.
 */
export function zkFloorLines(r: Results, s: Summaries): string[] {
  const rows: string[][] = []
  for (const [where, ours, floor, curator] of [
    ['standalone', 'zk', 'zk-floor', 'curator'],
    ['3-node ensemble', 'zk3', 'zk3-floor', 'curator3'],
  ] as const) {
    for (const [cell, scenario, f, suffix] of [
      ['uncontended c=1', 'c1', 'rate', ''],
      ['uncontended c=50', 'c50', 'rate', ''],
      ['10 waiters', 'w10', 'gapP50', ''],
      ['10 waiters in one process (4 sessions)', 'w10', 'gapP50', '-1p'],
    ] as const) {
      const floorVsCurator = sameRunRatio(r.cells, `${floor}${suffix}`, curator, scenario, f)
      if (floorVsCurator.n === 0) continue
      rows.push([
        `ZooKeeper ${where}, ${cell}`,
        f === 'rate' ? 'pairs/s' : 'handoff gap p50 ms',
        fmtAuto(med(s, `${ours}${suffix}`, scenario, f)),
        fmtAuto(med(s, `${floor}${suffix}`, scenario, f)),
        fmtAuto(med(s, curator, scenario, f)),
        ratioText(floorVsCurator),
        ratioText(sameRunRatio(r.cells, `${ours}${suffix}`, `${floor}${suffix}`, scenario, f)),
      ])
    }
  }
  if (rows.length === 0) return []
  return [
    "The ZooKeeper cells beside their floor: Curator's InterProcessMutex recipe on the bare wire protocol, in the same Node workers and layouts as latchkey, with no client library, lease or fencing token (bench/lib/zk-recipe-floor.ts). Ratios are run by run, the first figure over the second (a rate is better higher, a gap lower). Where the floor is not ahead of Curator, no Node lock can meet that target.",
    '',
    table(['cell', 'figure', 'latchkey', 'floor', 'Curator', 'floor ÷ Curator', 'latchkey ÷ floor'], rows),
    '',
  ]
}

/**
 * The etcd contended cells beside the floors of the two etcd recipes (bench/lib/etcd-line-floor.ts: latchkey's line,
 * every process with a place in line woken by each delete; bench/lib/etcd-go-mutex-floor.ts: Go's concurrency.Mutex,
 * each waiter watching the key before its own): client CPU per acquisition, harness included as in every cell, and
 * the handoff gap. Where both floors spend more than the CPU target, no etcd lock of either recipe meets it here.
 */
export function etcdFloorLines(r: Results, s: Summaries): string[] {
  const rows: string[][] = []
  const ms = (id: string, scenario: string) => fmtAuto(med(s, id, scenario, 'cpuPer1k') / 1_000)
  for (const [cell, scenario] of [
    ['10 waiters', 'w10'],
    ['100 waiters', 'w100'],
  ] as const) {
    const vsFloor = sameRunRatio(r.cells, 'etcd', 'etcd-floor', scenario, 'cpuPer1k')
    if (vsFloor.n === 0) continue
    rows.push([
      `etcd, ${cell}`,
      ms('etcd', scenario),
      ms('etcd-floor', scenario),
      ms('etcd-go-floor', scenario),
      ratioText(vsFloor),
      `${fmtAuto(med(s, 'etcd', scenario, 'gapP50'))} / ${fmtAuto(med(s, 'etcd-floor', scenario, 'gapP50'))} / ${fmtAuto(med(s, 'etcd-go-floor', scenario, 'gapP50'))} / ${fmtAuto(med(s, 'zk', scenario, 'gapP50'))}`,
      ratioText(sameRunRatio(r.cells, 'etcd-floor', 'zk', scenario, 'gapP50')),
      ratioText(sameRunRatio(r.cells, 'etcd', 'etcd-floor', scenario, 'gapP50')),
    ])
  }
  if (rows.length === 0) return []
  return [
    "The etcd cells beside the floors of the two etcd lock recipes, on latchkey's transport with no library, lease per TTL or fencing check: latchkey's line (one place per process, every process in line woken by each delete; bench/lib/etcd-line-floor.ts) and Go's concurrency.Mutex (each waiter watches the key before its own, then reads the line again; bench/lib/etcd-go-mutex-floor.ts). Client CPU per acquisition includes the harness, as in every cell. Where both floors are above the CPU target, no etcd lock of either recipe meets it on this host. The gap target is set against latchkey's ZooKeeper backend: where the line floor's gap is not shorter than ZooKeeper's (run by run), no lock of that recipe meets it; the Go recipe's gap is longer still (it reads the line after each wake-up). bench/ETCD-CPU.md compares the two recipes step by step.",
    '',
    table(
      [
        'cell',
        'latchkey CPU ms/acq',
        'line floor',
        'Go recipe floor',
        'CPU: latchkey ÷ line floor',
        'gap p50 ms: latchkey / line floor / Go floor / ZooKeeper standalone',
        'gap: line floor ÷ ZooKeeper',
        'gap: latchkey ÷ line floor',
      ],
      rows,
    ),
    '',
  ]
}
