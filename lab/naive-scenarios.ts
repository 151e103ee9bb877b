import type { RunSummary } from './checker/summarize.js'
import type { FaultSpec } from './runner/fault-spec.js'
import { NO_FAULT, pauseFault } from './scenario-def.js'

/** A naive algorithm, the fault its argument names, and how a run confirms the claim. */
export interface NaiveDef {
  strategy: string
  scenario: string
  /** The server it needs: the lab's private Redis or the shared ZooKeeper. */
  server: 'redis' | 'zookeeper'
  claim: string
  fault: (ttlMs: number) => FaultSpec
  /** The latchkey scenario with the same fault, for the side-by-side line. */
  sameFaultAs: string | undefined
  confirmed(summary: RunSummary, ttlMs: number): boolean
  evidence(summary: RunSummary): string
}

/** The naive algorithms the design arguments reject, each under the fault its argument names. */
export const NAIVE: NaiveDef[] = [
  {
    strategy: 'naive-setnx-expire',
    scenario: 'K9-after-setnx',
    server: 'redis',
    claim: 'SETNX then EXPIRE: a crash between the two leaves the lock held forever',
    fault: (ttl) => ({ kind: 'kill', at: 'after-setnx', everyMs: 2 * ttl, durationMs: [0, 0] }),
    sameFaultAs: 'K9',
    confirmed: (s, ttl) => s.unavailableMaxMs > 3 * ttl,
    evidence: (s) => `longest stretch with waiters and no holder ${s.unavailableMaxMs} ms of a ${s.seconds} s run`,
  },
  {
    strategy: 'naive-getset-timestamp',
    scenario: 'race-after-get',
    server: 'redis',
    claim:
      'GET/GETSET timestamps, the race itself: a client paused between reading an expired timestamp and its GETSET also wins (one host, one clock)',
    fault: (ttl) => pauseFault('after-get', ttl),
    sameFaultAs: undefined,
    confirmed: (s) => s.overlaps > 0,
    evidence: (s) => `${s.overlaps} overlaps, ${s.staleAccepted} stale writes accepted, ${s.lostUpdates} lost updates`,
  },
  {
    strategy: 'naive-getset-timestamp',
    scenario: 'T3',
    server: 'redis',
    claim:
      'GET/GETSET timestamps: a holder paused past its timestamp (after checking it) and the client that took over both write',
    fault: (ttl) => pauseFault('in-cs', ttl),
    sameFaultAs: 'T3',
    confirmed: (s) => s.staleAccepted > 0,
    evidence: (s) => `${s.overlaps} overlaps, ${s.staleAccepted} stale writes accepted, ${s.lostUpdates} lost updates`,
  },
  {
    strategy: 'naive-del-unlock',
    scenario: 'T2',
    server: 'redis',
    claim: "unconditional DEL unlock: a holder back from a pause deletes its successor's lock",
    fault: (ttl) => pauseFault('enter', ttl),
    sameFaultAs: 'T2',
    confirmed: (s) => s.cleanOverlaps > 0,
    evidence: (s) =>
      `${s.cleanOverlaps} overlaps between two clients neither of which was paused (the DEL let a third in), ${s.lostUpdates} lost updates`,
  },
  {
    strategy: 'naive-ttl-check',
    scenario: 'T3',
    server: 'redis',
    claim: 'checking the TTL before writing instead of fencing: a pause between check and write lets two holders write',
    fault: (ttl) => pauseFault('in-cs', ttl),
    sameFaultAs: 'T3',
    confirmed: (s) => s.staleAccepted > 0,
    evidence: (s) => `${s.staleAccepted} stale writes accepted after a passing check, ${s.lostUpdates} lost updates`,
  },
  {
    strategy: 'naive-zk-herd',
    scenario: 'T1',
    server: 'zookeeper',
    claim: 'a plain ephemeral node everyone watches: every release wakes every waiter (herd)',
    fault: () => NO_FAULT,
    sameFaultAs: undefined,
    confirmed: (s) => (s.wakesPerRelease ?? 0) >= 2,
    evidence: (s) => `${s.wakesPerRelease ?? 0} wake-ups per release with 5 clients (a predecessor watch gives 1)`,
  },
]
