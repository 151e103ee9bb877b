import { seededRng } from '../lib/rng.js'
import type { CutWhich } from './netns-clusters.js'

/**
 * A fault:
 * - `pause`: SIGSTOP of the client, SIGCONT after the drawn duration (a GC or VM pause: its timers freeze too);
 * - `session-kill`: a `pause` during which the lock server ends the paused client's session (T8: MariaDB `KILL`,
 *   PostgreSQL `pg_terminate_backend`, etcd lease revoke, ZooKeeper session close, Redis `CLIENT KILL`);
 * - `starve`: the client blocks its own event loop for the duration (a long synchronous computation: the process
 *   runs, but no timer, renewal or reply is handled until it ends);
 * - `kill`: SIGKILL of the client (the runner spawns a fresh one);
 * - `server-kill`: SIGKILL of the lock server as a client enters, restarted after the drawn duration;
 * - `server-pause`: SIGSTOP of the lock server, SIGCONT after the duration (servers the lab owns);
 * - `cluster-partition`: one member of the lock cluster is cut off from the other members (not from the clients)
 *   as a client enters, healed after the duration (T9; `member` says which: the leader, or a follower serving
 *   the holder);
 * - `partition`: the client's every connection to the lock service holds all traffic both ways for the duration,
 *   then delivers it (a silent partition that heals; see fault-proxy.ts);
 * - `stall-reply`: the lock service's replies to the client are held for the duration (a delayed acquire reply);
 * - `delay-write`: the client's write to the resource is held in flight for the duration; the client's own
 *   request times out, it leaves and releases, and the write lands later;
 * - `server-clock-jump`: the lock server's wall clock steps forward by the drawn duration (libfaketime; its
 *   monotonic clock does not move);
 * - `client-clock-jump`: the struck client's wall clock steps by the drawn duration, forward and back in turn
 *   (its monotonic clock does not move);
 * - `server-drift`: the lock server's wall clock runs `rate` times as fast as real time for the whole run (set when
 *   the server starts; logged as one fault at the start);
 * - `failover`: the Redis primary is killed -9 as a client enters and its replica promoted;
 * - `majority-split`: RedLock clients see different majorities: through each client's own proxies, odd-numbered
 *   clients reach nodes 1-3 only and even-numbered ones nodes 3-5 only (the rest of their links hold all traffic
 *   both ways, as in `partition`), from a client's entry for the drawn duration, then healed; with `moves`, the two
 *   sides swap half-way, while the struck holder is still inside (its side now reaches the other majority).
 * `at` is where a client fault strikes: `enter` (a client that just entered the critical section, T2), `write`
 * (its write request), or a named pause point of the client (`in-cs`: after the validity check, before the write,
 * T3; `acquire`: just before it asks for the lock; `after-setnx`; `after-get`).
 */
export interface FaultSpec {
  kind:
    | 'none'
    | 'pause'
    | 'session-kill'
    | 'starve'
    | 'kill'
    | 'server-kill'
    | 'server-pause'
    | 'partition'
    | 'cluster-partition'
    | 'stall-reply'
    | 'delay-write'
    | 'server-clock-jump'
    | 'client-clock-jump'
    | 'server-drift'
    | 'failover'
    | 'majority-split'
  at: string
  /** Mean time between faults. */
  everyMs: number
  /** Pause length range (ms); for a clock jump, its size. */
  durationMs: [number, number]
  /** `cluster-partition`: the member cut off. */
  member?: CutWhich
  /** `server-drift`: how many times as fast as real time the server's wall clock runs. */
  rate?: number
  /** A clock jump: how long after the strike the clock steps (the holder works on meanwhile). */
  delayMs?: number
  /** `majority-split`: the sides swap half-way through the fault. */
  moves?: boolean
  /**
   * The odd-numbered clients' clocks, monotonic included, run this many times as fast as real time (libfaketime)
   * for the whole run, and the fault strikes only them; their histories are then stamped by the runner (T17b). The
   * others keep real clocks, so the waiters that take over from a slowed holder retry on time.
   */
  clientClockRate?: number
  /** How long a holder struck at `enter` keeps working, on its own clock (default: the fault's duration). */
  workMs?: number
}

/** Whether client `proc` runs on a slowed clock in this fault (see {@link FaultSpec.clientClockRate}). */
export function slowedClient(spec: FaultSpec, proc: string): boolean {
  return spec.clientClockRate !== undefined && Number(proc.slice(1)) % 2 === 1
}

/** Faults whose duration is time the fault lasts (the next one is scheduled after it ends). */
const LASTING = new Set<FaultSpec['kind']>([
  'pause',
  'session-kill',
  'starve',
  'server-kill',
  'server-pause',
  'partition',
  'cluster-partition',
  'stall-reply',
  'delay-write',
  'majority-split',
])

/** One planned fault, drawn from the seed. */
export interface PlannedFault {
  afterMs: number
  durationMs: number
}

/** The seeded schedule: the same seed gives the same gaps and durations, so a failing run can be replayed. */
export function planFaults(spec: FaultSpec, seed: number, runMs: number): PlannedFault[] {
  if (spec.kind === 'none' || spec.kind === 'server-drift') return []
  const rng = seededRng(seed ^ 0x5eed)
  const plan: PlannedFault[] = []
  let clock = 1_000
  for (;;) {
    const afterMs = rng.int(Math.round(spec.everyMs / 2), Math.round((spec.everyMs * 3) / 2))
    const drawn = rng.int(spec.durationMs[0], spec.durationMs[1])
    // A client's clock goes forward and back in turn, so it does not end the run hours away from the others.
    const durationMs = spec.kind === 'client-clock-jump' && plan.length % 2 === 1 ? -drawn : drawn
    clock += afterMs + (LASTING.has(spec.kind) ? durationMs : 0)
    if (clock > runMs - 1_000) return plan
    plan.push({ afterMs, durationMs })
  }
}
