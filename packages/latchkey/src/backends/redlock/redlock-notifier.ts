/**
 * RedLock release notifications: one subscriber connection per node per backend, opened on the first wait. A
 * release publishes the released owner on every node's channel of the lock (scripts/release.lua); the first of
 * those messages to arrive wakes ONE local waiter, the longest-waiting, and the other nodes' copies are ignored.
 * So a release costs one RedLock round per process instead of one per waiter (a herd of split votes), and the
 * waiters of a process are served in order of arrival. Any node suffices: a release goes to every node, so a
 * message is lost only if it is lost on all of them, and a lost one costs at most the core's fallback pause.
 */
import type { SubscriberConnection } from '../redis/client-adapter.js'
import { RedlockChannel, RedlockSubscription } from './redlock-subscription.js'

/** Opens one node's subscriber connection (see RedlockNode.openSubscriber). */
export type SubscriberOpener = (
  onMessage: (channel: string, message: string) => void,
  onError: (e: unknown) => void,
) => SubscriberConnection

/** How many released owners per channel are remembered to drop the other nodes' copies of a message. */
const REMEMBERED = 8

/**
 * At most this long between two rounds of one process for one lock while its waiters sleep: the bound on what a
 * release message lost on every node (subscriber connections reconnecting) can cost, since the waiters of a
 * process that were not woken skip their fallback tries in between.
 */
const POLL_EVERY_MS = 1_000

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
  ) {
    this.connections = openers.map(() => undefined)
  }

  /** Opens the subscription of the waiting acquire `owner` on `channel`, subscribing the channel if needed. */
  subscribe(channel: string, owner: string): RedlockSubscription {
    let group = this.channels.get(channel)
    if (group === undefined) {
      group = new RedlockChannel(channel, this.openers.length)
      this.channels.set(channel, group)
    }
    group.idleSince = undefined
    const sub = new RedlockSubscription(group, owner, (s) => this.detach(s))
    group.subs.add(sub)
    this.byOwner.set(owner, sub)
    this.listen(group)
    return sub
  }

  /** The open subscription of the waiting acquire `owner`, if it has one. */
  subscriptionOf(owner: string): RedlockSubscription | undefined {
    return this.byOwner.get(owner)
  }

  /**
   * For a try of `sub` that no release woke (its first, or a fallback timer's): how long the holder found by this
   * process's last round goes on blocking it, when that holder's release has not been announced and this process
   * asked the nodes less than {@link POLL_EVERY_MS} ago; otherwise undefined (make the round). Saves the
   * sleeping waiters of a process one RedLock round each per fallback pause.
   */
  blockedFor(sub: RedlockSubscription, now: number): number | undefined {
    const group = sub.channel
    const blocked = group.blocked
    const newcomer = !sub.tried
    sub.tried = true
    if (sub.owesTry || sub.retrying || group.subscribedAt === undefined) return undefined
    // A newcomer behind waiters of its own process queues behind them instead of barging in: the oldest is woken
    // by the next release (then the next oldest), and the process still asks the nodes once a second.
    const queued = newcomer && group.subs.values().next().value !== sub
    if (queued && now - group.polledAt < POLL_EVERY_MS) return POLL_EVERY_MS
    if (blocked === undefined) return undefined
    if (now >= blocked.until || now - group.polledAt >= POLL_EVERY_MS) return undefined
    if (group.released.includes(blocked.holder)) return undefined
    return blocked.until - now
  }

  /**
   * Whether `owner`, a split round's leader, is to be ignored: announced released, or led for longer than
   * {@link POLL_EVERY_MS} without winning (its process died or its view differs), so a dead leader's minority of
   * keys does not hold everyone back until it expires.
   */
  isGone(channel: string, owner: string, now: number): boolean {
    const group = this.channels.get(channel)
    if (group === undefined) return false
    if (group.released.includes(owner)) return true
    return group.leader?.owner === owner && now - group.leader.since >= POLL_EVERY_MS
  }

  /** Records that this process stands back for the split round's leader `owner`. */
  standBack(sub: RedlockSubscription, owner: string, now: number): void {
    const group = sub.channel
    if (group.leader?.owner !== owner) group.leader = { owner, since: now }
  }

  /** Records a round of `sub` sent at `sentAt`: found `holder` holding until `until`, or nobody (undefined). */
  polled(sub: RedlockSubscription, sentAt: number, holder: string | undefined, until: number): void {
    const group = sub.channel
    group.polledAt = Math.max(group.polledAt, sentAt)
    // Recorded even before the SUBSCRIBE is acknowledged (each acknowledgement wakes a waiter, whose round then
    // refreshes it), but used only after: see blockedFor.
    group.blocked = holder === undefined ? undefined : { holder, until }
  }

  /** One message from a node: the owner whose lease was released. */
  dispatch(channel: string, owner: string): void {
    const group = this.channels.get(channel)
    if (group === undefined || group.released.includes(owner)) return
    group.released.push(owner)
    if (group.released.length > REMEMBERED) group.released.shift()
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
          (channel, message) => this.dispatch(channel, message),
          () => undefined,
        )
        this.connections[i] = connection
      }
      group.subscribed[i] = connection.subscribe(group.name).then(
        () => {
          group.subscribedAt ??= performance.now()
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
    group.subs.delete(sub)
    if (this.byOwner.get(sub.owner) === sub) this.byOwner.delete(sub.owner)
    // A woken waiter leaving without retrying (acquired by its try in flight, timed out, aborted) must not
    // swallow the wake.
    if (sub.owesTry) this.wakeOne(group)
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
