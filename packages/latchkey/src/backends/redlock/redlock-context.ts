/**
 * What every RedLock operation shares: the nodes and settings, the notifier, how a lock names its key and channel,
 * and what this process knows of its own waiters and holders.
 */
import type { HolderRef, LockRef } from '../../backend/types.js'
import type { FanOutTiming } from './fan-out.js'
import type { LeaseValidity } from './lease-validity.js'
import { nodeTiming, releaseTiming } from './node-timing.js'
import type { RedlockNode } from './redlock-node.js'
import type { RedlockNotifier } from './redlock-notifier.js'

/** Resolved settings of a RedlockBackend. */
export interface RedlockSettings {
  readonly quorum: number
  readonly driftFactor: number
  /** Fixed per-node timeout, or undefined for the TTL-based default (defaultNodeTimeoutMs). */
  readonly nodeTimeoutMs: number | undefined
  readonly retryDelayMs: number
  readonly keyPrefix: string
}

/** The state one RedlockBackend shares between its rounds. */
export class RedlockContext {
  /** Waiting owners that kept their keys as a split round's plurality leader, with how many rounds in a row. */
  readonly leads = new Map<string, number>()
  /** Waiting owners that took a place in line on the nodes (and have not got the lock): leaveLine clears it. */
  readonly inLine = new Set<string>()
  /**
   * Holders of this process, with the time from which a quorum of nodes is known to keep their keys (or the keys
   * of the holder before them, which a release here is renaming to them on the same connections) for `ttlMs`: a
   * release at home passes what is left of it on (see handOn).
   */
  readonly validity = new Map<string, LeaseValidity>()

  constructor(
    readonly nodes: readonly RedlockNode[],
    readonly settings: RedlockSettings,
    /** Undefined when a client cannot duplicate itself: waiters then poll. */
    readonly notifier: RedlockNotifier | undefined,
  ) {}

  key(ref: LockRef): string {
    return this.settings.keyPrefix + ref.key
  }

  /** The channel on which every node announces the lock's releases (a channel, not a key: no slot, no TTL). */
  channel(ref: LockRef): string {
    return `${this.settings.keyPrefix}${ref.key}:released`
  }

  /** ARGV of RELEASE: owner, the channel when releases are pushed, and the mode ('h' hand on, 'u' undo). */
  releaseArgs(ref: HolderRef, mode: 'h' | 'u'): string[] {
    return this.notifier === undefined ? [ref.owner] : [ref.owner, this.channel(ref), mode]
  }

  timing(ttlMs: number): FanOutTiming {
    return nodeTiming(this.settings.nodeTimeoutMs, ttlMs)
  }

  releaseTiming(): FanOutTiming {
    return releaseTiming(this.settings.nodeTimeoutMs)
  }
}
