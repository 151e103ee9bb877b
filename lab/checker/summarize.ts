import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import type { HistoryEvent } from '../lib/history.js'
import { proofExcerpt } from './excerpt.js'
import { lossLags, percentile, unavailabilityWindows } from './liveness.js'
import { type LoadedRun, loadRun } from './load.js'
import { findOverlaps, findStaleWrites, findTokenRegressions, type OverlapWitness, type StaleWrite } from './safety.js'
import { timelineSvg } from './timeline.js'

/** Round trips of the runner's pings to the clients whose events it stamps on receipt (ms). */
export interface StampRtt {
  p50: number
  p99: number
  max: number
  n: number
}

/** Everything the checker concludes about one run (also written to the run's `summary.json`). */
export interface RunSummary {
  run: string
  scenario: string
  backend: string
  strategy: string
  fencing: boolean
  ttlMs: number
  seconds: number
  faults: number
  sections: number
  overlaps: number
  overlapsPer1000: number
  /** Overlaps in which no client involved had been paused during its section. */
  cleanOverlaps: number
  /** Overlaps in which a client inside had not been told it lost the lock. */
  unwarnedOverlaps: number
  staleAccepted: number
  staleRejected: number
  ackedWrites: number
  finalValue: number
  lostUpdates: number
  tokensChecked: number
  tokenRegressions: number
  losses: number
  lossLagP50Ms: number
  lossLagMaxMs: number
  /** Every loss-signal lag of the run (ms; negative: noticed before anyone else got the lock), for the CDF. */
  lossLagsMs: number[]
  unavailableMaxMs: number
  unavailableP50Ms: number
  acquisitions: number
  /** Wake-ups per release (the herd strategy logs its wake-ups). */
  wakesPerRelease: number | undefined
  /** Runs whose slowed clients' events the runner stamped (T17b): its ping round trips to them (ms). */
  stampRttMs?: StampRtt
  /** The first witnesses, with the events around them, for reports. */
  firstOverlap: OverlapWitness | undefined
  firstStaleAccepted: StaleWrite | undefined
  excerpt: HistoryEvent[]
}

/** The nemesis events that mark a fault striking (the others mark its end). */
const FAULT_EVENTS = new Set([
  'pause',
  'kill',
  'server-kill',
  'server-pause',
  'partition',
  'cluster-partition',
  'stall-reply',
  'delay-write',
  'clock-jump',
  'clock-drift',
  'failover',
  'majority-split',
])

const count = (events: HistoryEvent[], f: string, type: string): number =>
  events.filter((e) => e.f === f && e.type === type).length

/** Checks a loaded run. */
export function summarize(loaded: LoadedRun): RunSummary {
  const { meta, events } = loaded
  const referee = events.filter((e) => e.proc === 'referee')
  const clients = events.filter((e) => e.proc !== 'referee' && e.proc !== 'nemesis')
  const { sections, overlaps } = findOverlaps(
    events.filter((e) => e.proc === 'referee' || e.proc === 'nemesis' || e.f === 'lost'),
  )
  const stale = findStaleWrites(referee)
  const tokens = findTokenRegressions(clients)
  const lags = lossLags(clients)
  const windows = unavailabilityWindows(
    events.filter((e) => e.proc !== 'referee'),
    meta.endedAt,
  )
  const ackedWrites = count(clients, 'write', 'ok')
  const releases = count(clients, 'release', 'ok')
  const wakes = count(clients, 'wake', 'info')
  const firstOverlap = overlaps[0]
  const firstStaleAccepted = stale.find((s) => s.accepted)
  const excerpt = proofExcerpt(events, firstStaleAccepted ?? stale[0], overlaps.find((o) => o.clean) ?? firstOverlap)
  return {
    run: meta.run,
    scenario: meta.scenario,
    backend: meta.backend,
    strategy: meta.strategy,
    fencing: meta.fencing,
    ttlMs: meta.ttlMs,
    seconds: Math.round((meta.endedAt - meta.startedAt) / 100) / 10,
    faults: events.filter((e) => e.proc === 'nemesis' && FAULT_EVENTS.has(e.f)).length,
    sections,
    overlaps: overlaps.length,
    cleanOverlaps: overlaps.filter((o) => o.clean).length,
    unwarnedOverlaps: overlaps.filter((o) => !o.warned).length,
    overlapsPer1000: sections === 0 ? 0 : Math.round((overlaps.length / sections) * 10_000) / 10,
    staleAccepted: stale.filter((s) => s.accepted).length,
    staleRejected: stale.filter((s) => !s.accepted).length,
    ackedWrites,
    finalValue: meta.finalValue,
    lostUpdates: Math.max(0, ackedWrites - meta.finalValue),
    tokensChecked: tokens.checked,
    tokenRegressions: tokens.regressions.length,
    losses: lags.length,
    lossLagP50Ms: Math.round(percentile(lags, 50)),
    lossLagMaxMs: Math.round(Math.max(0, ...lags)),
    lossLagsMs: lags.map((lag) => Math.round(lag)),
    unavailableMaxMs: Math.round(Math.max(0, ...windows)),
    unavailableP50Ms: Math.round(percentile(windows, 50)),
    acquisitions: count(clients, 'acquire', 'ok'),
    wakesPerRelease: wakes === 0 ? undefined : Math.round((wakes / Math.max(1, releases)) * 10) / 10,
    ...(meta.stampRttMs === undefined ? {} : { stampRttMs: meta.stampRttMs }),
    firstOverlap,
    firstStaleAccepted,
    excerpt,
  }
}

/** Loads, checks and writes `summary.json` for the run in `dir`. */
export function checkRun(dir: string): RunSummary {
  const loaded = loadRun(dir)
  const summary = summarize(loaded)
  const { startedAt, endedAt } = loaded.meta
  writeFileSync(
    join(dir, 'timeline.svg'),
    timelineSvg(loaded.events, startedAt, endedAt, formatSummary(summary).split('\n')[0]!),
  )
  writeFileSync(join(dir, 'summary.json'), `${JSON.stringify(summary, null, 2)}\n`)
  return summary
}

/** A few lines for a terminal. */
export function formatSummary(s: RunSummary): string {
  const lines = [
    `${s.run}: ${s.strategy} on ${s.backend}, ${s.scenario}, fencing ${s.fencing ? 'on' : 'off'}, ${s.seconds} s, ${s.faults} faults`,
    `  critical sections ${s.sections}, overlaps ${s.overlaps} (${s.overlapsPer1000}/1000, ${s.unwarnedOverlaps} with a holder not yet told), stale writes accepted ${s.staleAccepted} rejected ${s.staleRejected}`,
    `  acked writes ${s.ackedWrites}, final value ${s.finalValue}, lost updates ${s.lostUpdates}; tokens checked ${s.tokensChecked}, regressions ${s.tokenRegressions}`,
    `  losses signalled ${s.losses} (lag after successor p50 ${s.lossLagP50Ms} ms, max ${s.lossLagMaxMs} ms); unavailable p50 ${s.unavailableP50Ms} ms, max ${s.unavailableMaxMs} ms${s.wakesPerRelease === undefined ? '' : `; wake-ups per release ${s.wakesPerRelease}`}`,
  ]
  const rtt = s.stampRttMs
  if (rtt !== undefined) {
    lines.push(
      `  slowed clients' events stamped by the runner: ping round trip p50 ${rtt.p50} ms, p99 ${rtt.p99} ms, max ${rtt.max} ms (${rtt.n} pings)`,
    )
  }
  return lines.join('\n')
}
