import type { HistoryEvent } from '../lib/history.js'
import { subject } from './load.js'

/**
 * Loss-detection lag: for each `lost` (latchkey's `lease.signal` aborted), the time from the first grant to
 * another client after this lease was granted, to the abort. Negative: the loss was noticed before anyone else
 * got the lock (the watchdog saw it first); positive: the holder believed it held the lock that long after a
 * successor had it (a pause freezes the watchdog with the rest of the process).
 */
export function lossLags(events: HistoryEvent[]): number[] {
  const grantedAt = new Map<string, number>()
  const grants: { proc: string; t: number }[] = []
  const lags: number[] = []
  for (const event of events) {
    if (event.f === 'acquire' && event.type === 'ok') {
      grantedAt.set(event.proc, event.t)
      grants.push({ proc: event.proc, t: event.t })
    } else if (event.f === 'lost') {
      const since = grantedAt.get(event.proc) ?? 0
      const successor = grants.find((g) => g.proc !== event.proc && g.t > since)
      lags.push(successor === undefined ? -(event.t - since) : event.t - successor.t)
    }
  }
  return lags
}

/**
 * Unavailability windows: stretches with at least one client waiting to acquire and none holding (as the
 * clients see it: a killed holder stops holding when it dies, so a lock its crash leaves behind shows up here).
 */
export function unavailabilityWindows(events: HistoryEvent[], endedAt: number): number[] {
  const waiting = new Set<string>()
  const holding = new Set<string>()
  const windows: number[] = []
  let openedAt: number | undefined
  const update = (t: number): void => {
    const unavailable = waiting.size > 0 && holding.size === 0
    if (unavailable && openedAt === undefined) openedAt = t
    if (!unavailable && openedAt !== undefined) {
      windows.push(t - openedAt)
      openedAt = undefined
    }
  }
  for (const event of events) {
    const who = subject(event)
    if (event.f === 'acquire') {
      if (event.type === 'invoke') waiting.add(who)
      else waiting.delete(who)
      if (event.type === 'ok') holding.add(who)
    } else if (event.f === 'release' && event.type !== 'invoke') holding.delete(who)
    else if (event.f === 'kill') {
      waiting.delete(who)
      holding.delete(who)
    } else if (event.f === 'closed') waiting.delete(who)
    else continue
    update(event.t)
  }
  if (openedAt !== undefined) windows.push(endedAt - openedAt)
  return windows
}

/** The p-th percentile (0-100) of `values` (nearest rank), or 0 for none. */
export function percentile(values: number[], p: number): number {
  if (values.length === 0) return 0
  const sorted = [...values].sort((a, b) => a - b)
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))]!
}
