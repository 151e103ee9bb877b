/**
 * The report's computed prose and tables beyond the matrix: the headline ratios against the peers, the
 * scale and memory tables, the flash-sale table.
 */

import type { Results } from '../lib/results.js'
import { fmt, fmtAuto, fmtSpread, type Spread, spread } from '../lib/stats.js'
import { CEILING, type SaleRecord } from '../sections/flash-sale.js'
import { med, type Summaries } from './aggregate.js'
import { sameRunRatio, table } from './tables.js'

const PEERS = ['redlock4', 'redlock5', 'redis-semaphore']
const MiB = 2 ** 20

/** The Redis peer with the highest median rate in scenario `sc`. */
export function bestPeer(s: Summaries, sc: string): string | undefined {
  return PEERS.filter((p) => Number.isFinite(med(s, p, sc, 'rate'))).sort(
    (a, b) => med(s, b, sc, 'rate') - med(s, a, sc, 'rate'),
  )[0]
}

/** "N× shorter" or "N× longer": `ours` against `theirs`. */
function shorterOrLonger(ours: number, theirs: number): string {
  const r = theirs / ours
  return r >= 1 ? `${fmtAuto(r)}× shorter` : `${fmtAuto(1 / r)}× longer`
}

/**
 * Bullets: latchkey Redis against raw and the best peer of each scenario. Rate ratios are run by run (median [min–max]),
 * as in the targets table: a ratio of the two medians can disagree with it when runs drift.
 */
export function headline(r: Results, s: Summaries, labels: ReadonlyMap<string, string>): string[] {
  const out: string[] = []
  const name = (id: string) => labels.get(id) ?? id
  for (const c of r.matrixConfig.concurrency) {
    const sc = `c${c}`
    const peer = bestPeer(s, sc)
    const lk = med(s, 'redis', sc, 'rate')
    if (peer === undefined || !Number.isFinite(lk)) continue
    const raw = fmtSpread(sameRunRatio(r.cells, 'redis', 'raw', sc))
    out.push(
      `Uncontended, concurrency ${c}: latchkey ${fmt(lk)} pairs/s = ${raw}× raw SET NX PX + DEL (same run); best peer ${name(peer)} ${fmt(med(s, peer, sc, 'rate'))} → **${fmtSpread(sameRunRatio(r.cells, 'redis', peer, sc))}× the best peer** (run by run, as in the targets below); client CPU ${fmtAuto(med(s, 'redis', sc, 'cpuPer1k'))} vs ${fmtAuto(med(s, peer, sc, 'cpuPer1k'))} ms per 1k pairs.`,
    )
  }
  for (const w of r.matrixConfig.waiters) {
    const sc = `w${w}`
    const peer = bestPeer(s, sc)
    const lk = med(s, 'redis', sc, 'rate')
    if (peer === undefined || !Number.isFinite(lk)) continue
    const g = (id: string) => med(s, id, sc, 'gapP50')
    out.push(
      `${fmt(w)} waiters on one key: latchkey ${fmt(lk)} acq/s vs best peer ${name(peer)} ${fmt(med(s, peer, sc, 'rate'))} → **${fmtSpread(sameRunRatio(r.cells, 'redis', peer, sc))}×** (run by run); handoff gap p50 ${fmtAuto(g('redis'))} vs ${fmtAuto(g(peer))} ms (**${shorterOrLonger(g('redis'), g(peer))}**), p99 ${fmtAuto(med(s, 'redis', sc, 'gapP99'))} vs ${fmtAuto(med(s, peer, sc, 'gapP99'))} ms; ${fmtAuto(med(s, 'redis', sc, 'cmdsPerOp'))} vs ${fmtAuto(med(s, peer, sc, 'cmdsPerOp'))} server cmds/acq; client CPU ${fmtAuto(med(s, 'redis', sc, 'cpuPer1k'))} vs ${fmtAuto(med(s, peer, sc, 'cpuPer1k'))} ms per 1k acq; fairness max/min ${fmtAuto(med(s, 'redis', sc, 'fairness'))} vs ${fmtAuto(med(s, peer, sc, 'fairness'))}.`,
    )
  }
  return out
}

type Scale = NonNullable<Results['scale']>
/** A table from column specs: header and how to print one row. */
type Columns<T> = readonly (readonly [string, (x: T) => string])[]

function columns<T>(cols: Columns<T>, rows: readonly T[]): string {
  return table(
    cols.map(([h]) => h),
    rows.map((x) => cols.map(([, f]) => f(x))),
  )
}

const CYCLES: Columns<Scale['cycles'][number]> = [
  ['cycles (concurrency)', (c) => `${fmt(c.total)} (${c.concurrency})`],
  ['cycles/s', (c) => fmt(c.total / c.seconds)],
  [
    'heap after GC: start → ¼ → ½ → ¾ → end (MiB)',
    (c) => c.checkpoints.map((p) => fmtAuto(p.heapUsed / MiB)).join(' → '),
  ],
  [
    'RSS start → end (MiB)',
    (c) => `${fmtAuto((c.checkpoints[0]?.rss ?? 0) / MiB)} → ${fmtAuto((c.checkpoints.at(-1)?.rss ?? 0) / MiB)}`,
  ],
  ['server cmds/cycle', (c) => fmtAuto(c.serverCallsPerCycle)],
]

const HELD: Columns<Scale['held'][number]> = [
  ['locks held at once', (h) => fmt(h.count)],
  ['acquired in s', (h) => fmtAuto(h.acquireSeconds)],
  ['heap per held lock (bytes)', (h) => fmt((h.holding.heapUsed - h.before.heapUsed) / h.count)],
  ['RSS while holding (MiB)', (h) => fmtAuto(h.holding.rss / MiB)],
  ['server memory per lock (bytes)', (h) => fmt(h.serverMemoryPerLock)],
  [
    'renewals/s: expected (held ÷ TTL/3) / scripts seen by Redis',
    (h) => `${fmt(h.count / (h.ttlMs / 3000))} / ${fmt(h.serverScriptsPerSecond)}`,
  ],
  ['Redis cmds/s while holding (incl. inside Lua)', (h) => fmt(h.serverCallsPerSecond)],
  ['client CPU while holding, ms/s', (h) => fmtAuto(h.cpuMsPerSecond)],
  ['release all in s', (h) => fmtAuto(h.releaseSeconds)],
  ['release failures', (h) => String(h.lost)],
]

const DRAIN: Columns<Scale['drains'][number]> = [
  ['waiters on one lock (processes)', (d) => `${fmt(d.waiters)} (${d.processes})`],
  ['heap per waiting acquire (bytes)', (d) => fmt(d.heapPerWaiter)],
  ['drained in s', (d) => fmtAuto(d.drainSeconds)],
  ['handoffs/s', (d) => fmt(d.handoffsPerSecond)],
  ['handoff gap p50 / p99 ms', (d) => `${fmtAuto(d.gapP50)} / ${fmtAuto(d.gapP99)}`],
  ['server cmds/acq', (d) => fmtAuto(d.cmdsPerAcquisition)],
  ['give-ups', (d) => String(d.giveUps)],
  ['overlaps', (d) => String(d.overlaps)],
]

/** The scale and memory tables (one long run each), with a line saying what each measured. */
export function scaleTables(r: Results, labels: ReadonlyMap<string, string>): string[] {
  const sc = r.scale
  if (sc === undefined) return ['(not run)']
  const named = <T extends { id: string }>(cols: Columns<T>): Columns<T> => [
    ['backend', (x) => labels.get(x.id) ?? x.id],
    ...cols,
  ]
  const out = [
    '### Acquire/release cycles (concurrency 50, distinct keys): heap after GC at each quarter',
    columns(named(CYCLES), sc.cycles),
    '### Distinct locks held at once by one process, renewed by the watchdog meanwhile',
    columns(named(HELD), sc.held),
    '### Waiters on one lock: all queued behind a holder, then released; each acquires once and releases at once',
    columns(named(DRAIN), sc.drains),
  ]
  for (const e of sc.errors) out.push(`- ${e.test} on ${labels.get(e.id) ?? e.id} failed: ${e.error}`)
  return out
}

/**
 * A strategy's orders/s as a fraction of the ceiling probe's on the same backend, round by round (each round
 * runs the ceiling in turn with the strategies, so a round's two figures share the machine's load).
 */
export function ofCeiling(records: readonly SaleRecord[], backend: string, strategy: string): Spread {
  const at = (s: string, run: number) =>
    records.find((x) => x.backend === backend && x.strategy === s && x.run === run && x.error === undefined)
      ?.ordersPerSecond
  const runs = new Set(records.filter((x) => x.backend === backend && x.strategy === strategy).map((x) => x.run))
  return spread(
    [...runs].map((run) => {
      const mine = at(strategy, run)
      const ceiling = at(CEILING, run)
      return mine === undefined || ceiling === undefined ? undefined : mine / ceiling
    }),
  )
}

/** `–` when no round had a ceiling (results of a run before the probe existed). */
function ceilingShare(share: Spread): string {
  return share.n === 0 ? '–' : fmtSpread(share, (n) => n.toFixed(2))
}

/** Flash-sale: orders/s, share of the ceiling, latency, sold-in time per backend × strategy, medians [min–max] over the runs. */
export function saleTable(fs: Results['flashSale']): string {
  if (fs === undefined) return '(not run)'
  const rows: string[][] = []
  for (const b of fs.backends) {
    for (const strategy of fs.strategies) {
      const recs = fs.records.filter((x) => x.backend === b.id && x.strategy === strategy)
      if (recs.length === 0) continue
      const ok = recs.filter((x) => x.error === undefined)
      const pick = (f: 'ordersPerSecond' | 'p50' | 'p99' | 'soldInSeconds') => fmtSpread(spread(ok.map((x) => x[f])))
      const err = recs.find((x) => x.error !== undefined)?.error
      const inv = ok.every((x) => x.invariantsHold === true && x.oversold === 0)
      const probe = strategy === CEILING
      rows.push([
        `${b.label} (${b.workers} service process${b.workers > 1 ? 'es' : ''})`,
        probe ? 'ceiling (probe: 409 from memory)' : strategy,
        String(ok.length),
        ok.length === 0 ? `failed: ${err}` : pick('ordersPerSecond'),
        probe ? '1' : ceilingShare(ofCeiling(fs.records, b.id, strategy)),
        pick('p50'),
        pick('p99'),
        probe ? '–' : pick('soldInSeconds'),
        ok.length === 0
          ? '–'
          : probe
            ? ok.every((x) => x.invariantsHold === true)
              ? 'all 409'
              : 'NOT all 409'
            : inv
              ? 'all hold'
              : 'VIOLATED',
      ])
    }
  }
  const errs = fs.records.filter((x) => x.strategy === '*').map((x) => `\n- ${x.backend}: ${x.error}`)
  return (
    table(
      [
        'lock backend',
        'strategy',
        'runs',
        'orders/s',
        'of ceiling',
        'p50 ms',
        'p99 ms',
        'stock sold in s',
        'invariants',
      ],
      rows,
    ) + errs.join('')
  )
}
