/**
 * RedLock release notifications: one subscriber connection per node per backend, opened on the first wait. A
 * release hands the key to the first waiter in each node's line and publishes that (scripts/release.lua): only the
 * process of that waiter acts, taking the lease once a quorum of nodes handed it over (see handedOff). A release
 * with nobody in line publishes the released owner; once copies have come from a quorum of nodes, it wakes ONE
 * local waiter, the longest-waiting (the head), the only one that makes rounds of its own (see contention.ts). The
 * waiters of a process are served in order of arrival. A message is lost only if it is lost on every node, and a
 * lost one costs at most the core's fallback pause.
 */
import type { SubscriberConnection } from '../redis/client-adapter.js'
import { POLL_EVERY_MS } from './contention.js'
import { RedlockChannel, RedlockSubscription, type ReleaseCopies } from './redlock-subscription.js'

/** Opens one node's subscriber connection (see RedlockNode.openSubscriber). */
export type SubscriberOpener = (
  onMessage: (channel: string, message: string) => void,
  onError: (e: unknown) => void,
) => SubscriberConnection

/** How many released owners per channel are remembered (to count the nodes' copies of a message, and see isGone). */
const REMEMBERED = 8

/**
 * How long after the first copy of a release message the waiter is woken even if fewer than a quorum of nodes'
 * copies came (see dispatch). The copies of one release normally arrive within a millisecond of each other.
 */
const WAKE_GRACE_MS = 5

/**
 * How long after the first node handed a waiter the lock its round is started if a quorum of nodes has not (yet).
 * Longer than {@link WAKE_GRACE_MS}: the other nodes' copies are normally on their way (on a loaded host the five
 * servers run several ms apart), and a round started meanwhile only delays taking the lease until it returns; the
 * nodes' lines differ rarely (see RedlockSubscription.ticket).
 */
const GRANT_GRACE_MS = 50

/** Subscribes lazily, wakes one waiter per release, unsubscribes a channel after it has been idle a while. */
export class RedlockNotifier {
  private readonly connections: (SubscriberConnection | undefined)[]
  private readonly channels = new Map<string, RedlockChannel>()
  private readonly byOwner = new Map<string, RedlockSubscription>()
  /** Unsubscribes idle channels; runs only while some channel is idle. */
  private sweeper: NodeJS.Timeout | undefined
  private closed = false

  constructor(
    private readonly openers: readonly SubscriberOpener[],
    private readonly lingerMs: number,
    private readonly quorum: number,
  ) {
    this.connections = openers.map(() => undefined)
  }

  /** Opens the subscription of the waiting acquire `owner` on `channel`, subscribing the channel if needed. */
  subscribe(channel: string, owner: string, ttlMs?: number): RedlockSubscription {
    let group = this.channels.get(channel)
    if (group === undefined) {
      group = new RedlockChannel(channel, this.openers.length)
      this.channels.set(channel, group)
    }
    group.idleSince = undefined
    const sub = new RedlockSubscription(group, owner, ttlMs, (s) => this.detach(s))
    group.subs.add(sub)
    this.byOwner.set(owner, sub)
    this.listen(group)
    return sub
  }

  /** The open subscription of the waiting acquire `owner`, if it has one. */
  subscriptionOf(owner: string): RedlockSubscription | undefined {
    return this.byOwner.get(owner)
  }

  /** The local waiters of the lock whose releases `channel` announces, while it is subscribed. */
  channelOf(channel: string): RedlockChannel | undefined {
    return this.channels.get(channel)
  }

  /**
   * One message from node `node` (scripts/release.lua): "<owner>" released there with nobody in line,
   * "<owner> <next>" released and handed to the waiter <next>, "~<owner>" an undo deleted <owner>'s key there.
   */
  dispatch(channel: string, message: string, node: number): void {
    const group = this.channels.get(channel)
    if (group === undefined) return
    if (message.startsWith('~')) {
      const sub = this.byOwner.get(message.slice(1))
      sub?.grants.delete(node)
      sub?.undoneOn(node, -1)
      return
    }
    const space = message.indexOf(' ')
    if (space < 0) this.released(group, message, node)
    else this.handedOff(group, message.slice(0, space), message.slice(space + 1), node)
  }

  /**
   * `owner` released on `node` with nobody in line there. The first copy marks the owner released (see isGone); a
   * local waiter is woken by the copy that makes `quorum` nodes (or every node whose SUBSCRIBE was acknowledged, if
   * fewer), since only then can its round win a majority: woken by the first copy, its round reaches nodes the
   * release has not reached yet, finds the old holder there and has to go again (measured: a round in four was such
   * a stale one at 1,000 waiters). If those copies do not come (a subscriber connection down), {@link WAKE_GRACE_MS}
   * after the first copy wakes it anyway.
   */
  private released(group: RedlockChannel, owner: string, node: number): void {
    const release = group.releases.get(owner) ?? this.remember(group, owner, false)
    release.nodes.add(node)
    if (release.nodes.size >= Math.min(this.quorum, group.acknowledged)) this.wakeFor(group, release)
  }

  /**
   * `from` released on `node` and the node handed the key to `to`, the first waiter in line there: the lock moves
   * to one process without waking the others. A local `to` takes the lease without a round once a quorum of nodes
   * handed it over (see RedlockBackend.tryAcquire); with fewer, {@link GRANT_GRACE_MS} after the first its round
   * settles it (the lines of two nodes can differ while a waiter's place is on its way to them). Elsewhere, `to`
   * is what blocks this process's head.
   */
  private handedOff(group: RedlockChannel, from: string, to: string, node: number): void {
    if (!group.releases.has(from)) this.remember(group, from, true)
    const sub = this.byOwner.get(to)
    if (sub === undefined || sub.channel !== group) {
      group.blocked = { holder: to, until: performance.now() + POLL_EVERY_MS }
      return
    }
    sub.grants.add(node)
    if (sub.grantedNodes() >= this.quorum) {
      clearTimeout(sub.grantGrace)
      sub.grantGrace = undefined
      sub.fire()
      return
    }
    sub.grantGrace ??= setTimeout(() => {
      sub.grantGrace = undefined
      sub.fire()
    }, GRANT_GRACE_MS).unref()
  }

  /**
   * Starts counting the copies of `owner`'s release. `woken` when the release woke nobody here on purpose (it was
   * handed to a waiter): then no grace timer either.
   */
  private remember(group: RedlockChannel, owner: string, woken: boolean): ReleaseCopies {
    const r: ReleaseCopies = { nodes: new Set(), woken, grace: undefined }
    if (!woken) r.grace = setTimeout(() => this.wakeFor(group, r), WAKE_GRACE_MS).unref()
    group.releases.set(owner, r)
    // Forget the oldest: a copy of a release this far back is late enough to be treated as a new one.
    const [oldest] = group.releases.keys()
    if (group.releases.size > REMEMBERED && oldest !== undefined) {
      clearTimeout(group.releases.get(oldest)?.grace)
      group.releases.delete(oldest)
    }
    return r
  }

  /** Wakes one waiter for a release, once. */
  private wakeFor(group: RedlockChannel, release: ReleaseCopies): void {
    if (release.woken) return
    release.woken = true
    clearTimeout(release.grace)
    this.wakeOne(group)
  }

  async close(): Promise<void> {
    this.closed = true
    clearInterval(this.sweeper)
    this.sweeper = undefined
    for (const group of this.channels.values()) for (const sub of group.subs) sub.fire()
    this.channels.clear()
    this.byOwner.clear()
    const open = this.connections.filter((c) => c !== undefined)
    this.connections.fill(undefined)
    await Promise.all(open.map((c) => c.close().catch(() => undefined)))
  }

  /**
   * Wakes the longest-waiting subscription, even one whose try is in flight (it tries again at once should that try
   * lose): waking the next one instead would make two waiters of one process race for one release, and the
   * younger could win.
   */
  private wakeOne(group: RedlockChannel): void {
    group.subs.values().next().value?.fire()
  }

  /**
   * SUBSCRIBEs the channel on every node where it is not (yet): a node that failed it before (down, restarted)
   * is asked again by the next waiter. Each acknowledgement wakes one waiter, since a release published before
   * it went unseen on that node.
   */
  private listen(group: RedlockChannel): void {
    if (this.closed) return
    this.openers.forEach((open, i) => {
      if (group.subscribed[i] !== undefined) return
      let connection = this.connections[i]
      if (connection === undefined) {
        // Errors on a subscriber (mostly reconnect attempts) are not fatal: waits fall back to their timers, and
        // the command connections report the outage.
        connection = open(
          (channel, message) => this.dispatch(channel, message, i),
          () => undefined,
        )
        this.connections[i] = connection
      }
      group.subscribed[i] = connection.subscribe(group.name).then(
        () => {
          group.subscribedAt ??= performance.now()
          group.acknowledged++
          this.wakeOne(group)
        },
        () => {
          group.subscribed[i] = undefined
        },
      )
    })
  }

  private detach(sub: RedlockSubscription): void {
    const group = sub.channel
    const wasHead = group.subs.values().next().value === sub
    group.subs.delete(sub)
    if (this.byOwner.get(sub.owner) === sub) this.byOwner.delete(sub.owner)
    // A woken waiter leaving without retrying (acquired by its try in flight, timed out, aborted) must not
    // swallow the wake; and the next head takes its place in line on the nodes now, while the lock is held, so that
    // a release can hand it the lock, unless the release that handed `sub` the lock placed it there already.
    const next: RedlockSubscription | undefined = group.subs.values().next().value
    if (sub.owesTry || (wasHead && next?.placedAt === undefined)) this.wakeOne(group)
    if (group.subs.size === 0 && this.channels.get(group.name) === group) {
      group.idleSince = performance.now()
      this.sweeper ??= setInterval(() => this.sweep(), Math.max(50, this.lingerMs / 2)).unref()
    }
  }

  private sweep(): void {
    const now = performance.now()
    let idle = 0
    for (const group of this.channels.values()) {
      if (group.idleSince === undefined || group.subs.size > 0) continue
      if (now - group.idleSince < this.lingerMs) {
        idle++
        continue
      }
      this.channels.delete(group.name)
      group.subscribed.forEach((asked, i) => {
        if (asked !== undefined) this.connections[i]?.unsubscribe(group.name).catch(() => undefined)
      })
    }
    if (idle === 0) {
      clearInterval(this.sweeper)
      this.sweeper = undefined
    }
  }
}
