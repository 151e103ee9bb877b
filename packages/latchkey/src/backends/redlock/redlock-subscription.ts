import type { ReleaseSubscription } from '../../backend/types.js'
import { WakeableSubscription } from '../../backend/wakeable-subscription.js'

/** The nodes from which a release's message has come, and whether it has woken a waiter yet. */
export interface ReleaseCopies {
  readonly nodes: Set<number>
  woken: boolean
  grace: NodeJS.Timeout | undefined
}

/** The local waiters of one RedLock channel (one lock) and the state of its SUBSCRIBE on each node. */
export class RedlockChannel {
  /** Open subscriptions in order of arrival: the oldest is woken first. */
  readonly subs = new Set<RedlockSubscription>()
  /** Per node: the SUBSCRIBE is under way or acknowledged (undefined: not asked, or it failed). */
  readonly subscribed: (Promise<void> | undefined)[]
  /**
   * Owners whose release this process has seen announced, oldest first, with the nodes whose copy of the message
   * came: every node publishes each release, and the waiter is woken once, by the copy that makes a quorum.
   */
  readonly releases = new Map<string, ReleaseCopies>()
  /** How many nodes acknowledged the SUBSCRIBE. */
  acknowledged = 0
  /** When the first node acknowledged the SUBSCRIBE (monotonic ms): rounds sent after it are seen released. */
  subscribedAt: number | undefined
  /**
   * What blocks the lock as this process's last round found it: the holder of a majority (until its keys' expiry,
   * or our own lease's end), or the leader of a split round that this process stood back for. Waiters that were
   * not woken need not ask the nodes again while its release has not been announced (RedlockNotifier.blockedFor).
   */
  blocked: { readonly holder: string; readonly until: number } | undefined
  /** The split round's leader this process stands back for, and since when (a leader that died stays stuck). */
  leader: { readonly owner: string; readonly since: number } | undefined
  /** When this process last sent a round for this lock (monotonic ms). */
  polledAt = 0
  /** When the last subscription closed (the channel is unsubscribed after lingering idle). */
  idleSince: number | undefined

  constructor(
    readonly name: string,
    nodes: number,
  ) {
    this.subscribed = Array.from({ length: nodes }, () => undefined)
  }
}

/**
 * One waiting acquire's view of release messages. The notifier (redlock-notifier.ts) wakes one subscription
 * per release, the longest-waiting, so a release costs one RedLock round per process, not one per waiter.
 */
export class RedlockSubscription extends WakeableSubscription implements ReleaseSubscription {
  /** Woken and not yet retried: if it closes now, the wake is passed on to the next waiter. */
  owesTry = false
  /**
   * Its last round asked to be retried on a timer (a split round it leads or nobody leads, a release racing it):
   * the next try goes to the nodes even if no release woke it.
   */
  retrying = false
  /** Its poll timer does not by itself keep the process alive. */
  protected override readonly unrefTimer = true

  constructor(
    readonly channel: RedlockChannel,
    readonly owner: string,
    private readonly detach: (sub: RedlockSubscription) => void,
  ) {
    super()
  }

  fire(): void {
    this.owesTry = true
    if (this.wake !== undefined) this.wake()
    else this.pending = true
  }

  close(): void {
    if (this.closed) return
    this.closed = true
    this.wake?.()
    this.detach(this)
  }
}
