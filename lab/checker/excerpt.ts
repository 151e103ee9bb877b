import type { HistoryEvent } from '../lib/history.js'
import { subject } from './load.js'
import type { OverlapWitness, StaleWrite } from './safety.js'

/** The client-side completions and faults worth showing: no invokes, no wake-ups, not the referee's copies. */
const shown = (e: HistoryEvent): boolean => e.type !== 'invoke' && e.f !== 'wake' && e.proc !== 'referee'

/** From each client's last grant before `t` to `t + afterMs`: the sections that collided, side by side. */
function sections(events: HistoryEvent[], clients: string[], t: number, afterMs: number): HistoryEvent[] {
  const from = new Map<string, number>()
  for (const e of events) {
    if (e.t > t) break
    if (clients.includes(e.proc) && e.f === 'acquire' && e.type === 'ok') from.set(e.proc, e.t)
  }
  const start = Math.min(t, ...from.values())
  return events.filter((e) => {
    if (!shown(e) || e.t < start || e.t > t + afterMs) return false
    const who = subject(e)
    if (e.proc === 'nemesis') return clients.includes(who)
    if (clients.includes(who)) return e.t >= (from.get(who) ?? start)
    // Others appear only when a grant follows the collision (a DEL that freed someone else's lock).
    return e.f === 'acquire' && e.type === 'ok' && e.t > t
  })
}

/**
 * The history lines that prove a run's first violation: the stale write (or overlap) with the colliding
 * sections and the fault that caused it; for a crash that left the lock behind, the kill and the failed
 * acquisitions after it.
 */
export function proofExcerpt(
  events: HistoryEvent[],
  stale: StaleWrite | undefined,
  overlap: OverlapWitness | undefined,
): HistoryEvent[] {
  if (stale !== undefined) return sections(events, [stale.client, stale.supersededBy], stale.t, 30).slice(-30)
  if (overlap !== undefined) return sections(events, [overlap.entering, ...overlap.inside], overlap.t, 30).slice(-30)
  const kill = events.find((e) => e.f === 'kill')
  if (kill === undefined) return []
  const before = events.filter((e) => shown(e) && e.proc === subject(kill) && e.t < kill.t).slice(-2)
  const after = events.filter((e) => shown(e) && e.t >= kill.t && e.f === 'acquire').slice(0, 6)
  return [...before, kill, ...after]
}
