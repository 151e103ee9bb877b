/**
 * The usual comparison of lock services (docs/background.md#the-usual-comparison-of-lock-services), claim by claim, decided from the measured medians (nothing hand-written
 * but the wording): "MySQL locks are slow", "Redis is best at low concurrency (ZooKeeper second)", and
 * "ZooKeeper is far ahead at high concurrency, mainly because Redis clients spin".
 */
import { fmt, fmtAuto } from '../lib/stats.js'
import { get, med, type Summaries } from './aggregate.js'

const MYSQL = ['mariadb-table', 'mariadb-get_lock', 'mariadb-for_update']
const ZK = ['zk', 'zk3']
const SPINNING = ['redis-poll', 'redis-semaphore']
const CLUSTER = ['redis', 'redlock', 'zk', 'zk3', 'etcd', ...MYSQL, 'pg-table', 'pg-advisory']

/** A claim, what the numbers say, and the verdict. */
export interface Verdict {
  readonly claim: string
  readonly verdict: 'holds' | 'partly holds' | 'does not hold' | 'not measured'
  readonly evidence: readonly string[]
}

type Labels = ReadonlyMap<string, string>

const ratio = (a: number, b: number) => (Number.isFinite(a) && Number.isFinite(b) && b > 0 ? a / b : Number.NaN)
const x = (r: number) => `${fmtAuto(r)}×`

function tally(wins: number, total: number, all: Verdict['verdict'], none: Verdict['verdict']): Verdict['verdict'] {
  if (total === 0) return 'not measured'
  return wins === total ? all : wins === 0 ? none : 'partly holds'
}

/** Waiters actually run in a contended scenario (a backend may have been scaled down). */
function wOf(s: Summaries, id: string, w: number): string {
  const n = get(s, id, `w${w}`)?.waiters
  return n !== undefined && n !== w ? ` (run with ${fmt(n)} waiters)` : ''
}

/** Claim 1: MySQL locks are slow (than Redis and ZooKeeper, the note's other two). */
function mysqlSlow(s: Summaries, labels: Labels, waiters: readonly number[]): Verdict {
  const evidence: string[] = []
  let slower = 0
  let total = 0
  for (const id of MYSQL) {
    const parts: string[] = []
    for (const sc of ['c1', ...waiters.map((w) => `w${w}`)]) {
      const mine = med(s, id, sc, 'rate')
      const best = Math.max(med(s, 'redis', sc, 'rate'), med(s, 'zk', sc, 'rate'))
      if (!Number.isFinite(mine) || !Number.isFinite(best)) continue
      total++
      if (mine < best) slower++
      parts.push(`${sc === 'c1' ? 'uncontended' : `W=${sc.slice(1)}`} ${fmtAuto(mine)}/s = ${x(ratio(mine, best))}`)
    }
    if (parts.length > 0)
      evidence.push(`${labels.get(id) ?? id}: ${parts.join(', ')} of the better of Redis and ZooKeeper`)
  }
  evidence.push(`MariaDB slower in ${slower} of ${total} comparisons (rate at concurrency 1 and at each waiter count).`)
  return { claim: 'MySQL locks are slow', verdict: tally(slower, total, 'holds', 'does not hold'), evidence }
}

function ranking(s: Summaries, ids: readonly string[], sc: string): string[] {
  return ids
    .filter((id) => Number.isFinite(med(s, id, sc, 'rate')))
    .sort((a, b) => med(s, b, sc, 'rate') - med(s, a, sc, 'rate'))
}

/** Claim 2: Redis is best at low concurrency (the note puts ZooKeeper second: reported, not judged). */
function redisBestLow(s: Summaries, labels: Labels): Verdict {
  const evidence: string[] = []
  let firsts = 0
  let total = 0
  for (const sc of ['c1', 'w10']) {
    const trio = ranking(s, ['redis', ...ZK, ...MYSQL], sc)
    if (!trio.includes('redis')) continue
    total++
    if (trio[0] === 'redis') firsts++
    const all = ranking(s, CLUSTER, sc)
    const what = sc === 'c1' ? 'uncontended (concurrency 1), pairs/s' : 'W=10 contenders, acquisitions/s'
    const top = trio.map((id) => `${labels.get(id) ?? id} ${fmtAuto(med(s, id, sc, 'rate'))}`).join(' > ')
    evidence.push(`${what}: ${top}; Redis ranks ${all.indexOf('redis') + 1} of ${all.length} cluster backends`)
    const zkRank = Math.min(...ZK.map((id) => trio.indexOf(id)).filter((i) => i >= 0))
    if (Number.isFinite(zkRank))
      evidence.push(
        `ZooKeeper's better configuration ranks ${zkRank + 1} of ${trio.length} there (the note puts ZooKeeper second, after Redis).`,
      )
  }
  return {
    claim: 'Redis is best at low concurrency',
    verdict: tally(firsts, total, 'holds', 'does not hold'),
    evidence,
  }
}

function zkVersus(s: Summaries, labels: Labels, others: readonly string[], waiters: readonly number[]) {
  const evidence: string[] = []
  let ahead = 0
  let total = 0
  for (const w of waiters) {
    for (const zk of ZK) {
      const z = med(s, zk, `w${w}`, 'rate')
      for (const o of others) {
        const r = med(s, o, `w${w}`, 'rate')
        if (!Number.isFinite(z) || !Number.isFinite(r)) continue
        total++
        if (z > r) ahead++
        evidence.push(
          `W=${w}: ${labels.get(zk) ?? zk}${wOf(s, zk, w)} ${fmtAuto(z)}/s vs ${labels.get(o) ?? o}${wOf(s, o, w)} ${fmtAuto(r)}/s (${x(ratio(z, r))}); gap p50 ${fmtAuto(med(s, zk, `w${w}`, 'gapP50'))} vs ${fmtAuto(med(s, o, `w${w}`, 'gapP50'))} ms`,
        )
      }
    }
  }
  return { ahead, total, evidence }
}

/** What waiting costs Redis clients at `w` waiters: server commands and client CPU per acquisition. */
function spinCost(s: Summaries, labels: Labels, w: number): string {
  const line = ['redis', ...SPINNING]
    .map(
      (id) =>
        `${labels.get(id) ?? id} ${fmtAuto(med(s, id, `w${w}`, 'cmdsPerOp'))} server cmds/acq, ${fmtAuto(med(s, id, `w${w}`, 'cpuPer1k'))} ms client CPU per 1k acq`,
    )
    .join('; ')
  return `W=${w}: ${line}`
}

/** Claim 3: ZooKeeper is ahead at high concurrency, because Redis clients spin. */
function zkAheadHigh(s: Summaries, labels: Labels, waiters: readonly number[]): Verdict[] {
  const high = waiters.filter((w) => w >= 100)
  const spin = zkVersus(s, labels, SPINNING, high)
  const notify = zkVersus(s, labels, ['redis'], high)
  const cost = high.map((w) => spinCost(s, labels, w))
  const spinBeatsNotify = high.every(
    (w) => med(s, 'redis', `w${w}`, 'rate') >= Math.max(...SPINNING.map((id) => med(s, id, `w${w}`, 'rate'))),
  )
  // The "because" can hold only as far as the premise does: ZooKeeper ahead of spinning clients, not of
  // notified ones, with notifications at least as fast as polling.
  const becauseSpin: Verdict['verdict'] =
    spin.total === 0 || notify.total === 0
      ? 'not measured'
      : spin.ahead === 0 || !spinBeatsNotify
        ? 'does not hold'
        : spin.ahead === spin.total && notify.ahead === 0
          ? 'holds'
          : 'partly holds'
  return [
    {
      claim: 'ZooKeeper is ahead of spinning (polling) Redis clients at high concurrency (W ≥ 100)',
      verdict: tally(spin.ahead, spin.total, 'holds', 'does not hold'),
      evidence: [...spin.evidence, `ZooKeeper ahead in ${spin.ahead} of ${spin.total} comparisons.`],
    },
    {
      claim: "ZooKeeper is ahead of Redis at high concurrency, with latchkey's notification-based Redis waiting",
      verdict: tally(notify.ahead, notify.total, 'holds', 'does not hold'),
      evidence: [...notify.evidence, `ZooKeeper ahead in ${notify.ahead} of ${notify.total} comparisons.`],
    },
    {
      claim: '…because Redis clients spin (the gap is the polling, not Redis)',
      verdict: becauseSpin,
      evidence: [
        ...cost,
        `Notification-based Redis ${spinBeatsNotify ? 'is at least as fast as' : 'is slower than'} both polling configurations at every W ≥ 100.`,
      ],
    },
  ]
}

/** Every verdict, in the note's order. */
export function verdicts(s: Summaries, labels: Labels, waiters: readonly number[]): Verdict[] {
  return [mysqlSlow(s, labels, waiters), redisBestLow(s, labels), ...zkAheadHigh(s, labels, waiters)]
}
