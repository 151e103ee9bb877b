import type { HistoryEvent } from '../lib/history.js'
import { subject } from './load.js'

/** Two clients inside the critical section at once, as the referee saw it. */
export interface OverlapWitness {
  t: number
  entering: string
  inside: string[]
  /** No client involved was paused by the nemesis during its current critical section. */
  clean: boolean
  /** Every client inside had already been told (its `lease.signal` aborted) that it lost the lock. */
  warned: boolean
}

/**
 * Overlap witness from the referee's own log: an `enter` while another client has entered and not yet exited
 * (or was killed). Returns every witness; the critical-section count is the number of enters. `events` holds the
 * referee's, the nemesis's (which sections a pause touched; a kill ends the victim's section at once, before the
 * runner hears of the death) and the clients' `lost` events (which holders had been told).
 */
export function findOverlaps(events: HistoryEvent[]): { sections: number; overlaps: OverlapWitness[] } {
  const inside = new Set<string>()
  const paused = new Set<string>()
  const warned = new Set<string>()
  const overlaps: OverlapWitness[] = []
  let sections = 0
  for (const event of events) {
    const who = subject(event)
    if (event.f === 'pause') paused.add(who)
    else if (event.f === 'lost') {
      if (inside.has(who)) warned.add(who)
    } else if (event.f === 'enter') {
      sections += 1
      if (inside.size > 0 && !inside.has(who)) {
        const clean = ![...inside].some((p) => paused.has(p))
        overlaps.push({
          t: event.t,
          entering: who,
          inside: [...inside],
          clean,
          warned: [...inside].every((p) => warned.has(p)),
        })
      }
      inside.add(who)
    } else if (event.f === 'exit' || event.f === 'died' || event.f === 'kill') {
      inside.delete(who)
      paused.delete(who)
      warned.delete(who)
    }
  }
  return { sections, overlaps }
}

/** A write by a client that another client had entered after: the write of a superseded holder. */
export interface StaleWrite {
  t: number
  client: string
  token: string
  accepted: boolean
  /** The client that entered after the writer. */
  supersededBy: string
}

/**
 * Stale writes, defined from the referee's view and not from tokens (so backends without a fence are judged the
 * same way): a write by P when the latest admitted enter was by someone else. With fencing on, `accepted` says whether
 * the fence let it through.
 */
export function findStaleWrites(referee: HistoryEvent[]): StaleWrite[] {
  let latest: string | undefined
  const stale: StaleWrite[] = []
  for (const event of referee) {
    const who = event.client ?? '?'
    // An enter the fence turned away gave its client nothing: the writer it would supersede still owns the resource.
    if (event.f === 'enter' && event.accepted !== false) latest = who
    else if (event.f === 'write' && latest !== undefined && latest !== who) {
      stale.push({
        t: event.t,
        client: who,
        token: event.token ?? '',
        accepted: event.accepted === true,
        supersededBy: latest,
      })
    }
  }
  return stale
}

/** An acquisition whose token is not above a token granted (ok) before it was even asked for. */
export interface TokenRegression {
  proc: string
  token: string
  earlierToken: string
}

/**
 * Fence monotonicity in real-time order: if B's acquire was invoked after A's acquire completed ok, then
 * token(B) > token(A). Strategies without tokens (all `0`) are skipped.
 */
export function findTokenRegressions(events: HistoryEvent[]): { checked: number; regressions: TokenRegression[] } {
  const invokedAt = new Map<string, number>()
  const grants: { proc: string; invoked: number; ok: number; token: bigint }[] = []
  for (const event of events) {
    if (event.f !== 'acquire') continue
    if (event.type === 'invoke') invokedAt.set(event.proc, event.t)
    else if (event.type === 'ok' && event.token !== undefined && event.token !== '0') {
      grants.push({
        proc: event.proc,
        invoked: invokedAt.get(event.proc) ?? event.t,
        ok: event.t,
        token: BigInt(event.token),
      })
    }
  }
  const byOk = [...grants].sort((a, b) => a.ok - b.ok)
  const byInvoke = [...grants].sort((a, b) => a.invoked - b.invoked)
  const regressions: TokenRegression[] = []
  let highest: bigint | undefined
  let i = 0
  for (const grant of byInvoke) {
    while (i < byOk.length && byOk[i]!.ok < grant.invoked) {
      const done = byOk[i++]!
      if (highest === undefined || done.token > highest) highest = done.token
    }
    if (highest !== undefined && grant.token <= highest) {
      regressions.push({ proc: grant.proc, token: grant.token.toString(), earlierToken: highest.toString() })
    }
  }
  return { checked: grants.length, regressions }
}
