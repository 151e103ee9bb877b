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
   * not woken need not ask the nodes again while its release has not been announced (contention.blockedFor).
   */
  blocked: { readonly holder: string; readonly until: number } | undefined
  /** The split round's leader this process stands back for, and since when (a leader that died stays stuck). */
  leader: { readonly owner: string; readonly since: number } | undefined
  /** When this process last sent a round for this lock (monotonic ms). */
  polledAt = 0
  /** Releases of this process in a row that handed the lock to a local waiter (see local-successor.ts). */
  localRun = 0
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
  /** Nodes whose release handed this waiter the lock (scripts/release.lua), as their messages said. */
  readonly grants = new Set<number>()
  /**
   * Per node, the deletions of this waiter's key by its own undo minus the "~owner" messages that announced them.
   * While positive, a handoff message from before the undo may still be on its way (the undo's reply and the
   * message travel on different connections), so the node does not count among the grants.
   */
  readonly undone = new Map<number, number>()
  /** Wakes it when some nodes handed it the lock but not a quorum (yet): its round then settles it. */
  grantGrace: NodeJS.Timeout | undefined
  /** When its first round was sent (monotonic ms): every place it took in line, on any node, came after. */
  firstTriedAt: number | undefined
  /**
   * Per node, when the latest of its rounds that node answered was sent. That round ran there: a key a release handed
   * it there was set after the round put it in line, or was refreshed by the round; either way it expires no earlier
   * than this + its lease.
   */
  readonly answeredAt = new Map<number, number>()
  /**
   * Its place in line on every node: when it first took one (wall-clock ms; the same value on every node, ties
   * ordered by owner id). Not when it started waiting: the next head of a process takes its place while the lock is
   * held, so a release can reach some nodes before its place does; placed behind everyone already in line, it is
   * then not first on any node, and the nodes still agree on who is.
   */
  ticket: number | undefined
  /** A round of its own is out (or its undo): a release of this process does not hand it the lock meanwhile. */
  inRound = false
  /** A release of this process is handing it the lock: its next try waits for that to settle. */
  handing: Promise<void> | undefined
  /**
   * Set when a release of this process passed it the lock at once (handOn in handover.ts): from when the lease it
   * takes is timed (the validity of the holder before it). `tookInherited` once it took it.
   */
  inherited: number | undefined
  tookInherited = false
  /** Set when a release of this process handed it the lock on a quorum: when that release was sent. */
  handedAt: number | undefined
  /**
   * Set when a release of this process placed it in line on the nodes (handing the lock to the waiter before it):
   * when that release was sent. As head it then makes no round to take its place.
   */
  placedAt: number | undefined
  /** Its poll timer does not by itself keep the process alive. */

  protected override readonly unrefTimer = true

  constructor(
    readonly channel: RedlockChannel,
    readonly owner: string,
    /** Its lease length (undefined when the subscriber did not say: then no release of this process hands it the lock). */
    readonly ttlMs: number | undefined,
    private readonly detach: (sub: RedlockSubscription) => void,
  ) {
    super()
  }

  fire(): void {
    this.owesTry = true
    if (this.wake !== undefined) this.wake()
    else this.pending = true
  }

  /** The nodes that handed it the lock and still count. */
  grantedNodes(): number {
    let n = 0
    for (const i of this.grants) if ((this.undone.get(i) ?? 0) <= 0) n++
    return n
  }

  /**
   * When a lease made of the nodes that handed it the lock may be timed from: the `quorum`-th latest of their
   * lower bounds ({@link answeredAt}, else its first round), so that a quorum of those keys lives at least that long;
   * undefined without a quorum.
   */
  handedSince(quorum: number): number | undefined {
    const first = this.firstTriedAt
    if (first === undefined) return undefined
    const since: number[] = []
    for (const i of this.grants) if ((this.undone.get(i) ?? 0) <= 0) since.push(this.answeredAt.get(i) ?? first)
    if (since.length < quorum) return undefined
    since.sort((a, b) => b - a)
    return since[quorum - 1]
  }

  /** Adds `delta` to the undo balance of `node` (see {@link undone}). */
  undoneOn(node: number, delta: number): void {
    const n = (this.undone.get(node) ?? 0) + delta
    if (n === 0) this.undone.delete(node)
    else this.undone.set(node, n)
  }

  close(): void {
    if (this.closed) return
    this.closed = true
    this.stopListening()
    clearTimeout(this.grantGrace)
    this.wake?.()
    this.detach(this)
  }
}
