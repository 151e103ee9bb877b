import type { Setup } from './runner/fault-deployments.js'
import type { FaultSpec } from './runner/fault-spec.js'

/** What a scenario needs of a backend (see ScenarioDef.needs). */
export type ScenarioNeeds = 'server' | 'network' | 'session' | 'partition' | 'power-loss'

/** A fault scenario of the plan, for any backend. */
export interface ScenarioDef {
  id: string
  title: string
  fault: (ttlMs: number) => FaultSpec
  /**
   * `server`: only on servers the lab owns (it kills or freezes them; the SQL engines then run on private
   * instances); `network`: only where a client talks to the lock service over TCP; `session`: only where the
   * server can end one client's lock session; `partition`: only on a cluster the lab runs in network namespaces
   * of its own (lab/netns.sh), whose members it can cut off from each other; `power-loss`: only on a durable
   * server whose data dir the lab can put on lazy_fs.py.
   */
  needs?: ScenarioNeeds
  /**
   * Backends on which the plan expects this fault to break the fence itself (outcome U: the fencing counter can
   * go back): their stale writes with fencing on are the measured result of the cell, not a failed run.
   */
  unsafeOn?: string[]
  /** The backends the scenario applies to (all, when absent). */
  backends?: string[]
  /** A deployment of its own the scenario needs (a fake server clock, a replicated Redis). */
  setup?: Setup
}

/** No fault (the baseline). */
export const NO_FAULT: FaultSpec = { kind: 'none', at: '', everyMs: 0, durationMs: [0, 0] }

/** A client SIGSTOPped at `at` for 1.5-3x the TTL, about once per TTL. */
export const pauseFault = (at: string, ttlMs: number): FaultSpec => ({
  kind: 'pause',
  at,
  everyMs: ttlMs,
  durationMs: [Math.round(1.5 * ttlMs), 3 * ttlMs],
})
