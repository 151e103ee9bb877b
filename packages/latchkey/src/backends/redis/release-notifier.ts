/**
 * Release notifications over ONE subscriber connection per backend. A release names the waiter to wake, the
 * head of the line (fair waiters, waiting writers) or else the oldest mutex/semaphore watcher, across all
 * processes: only the process that has it wakes it (plus local readers, which share). So with 100 waiters a
 * release costs one retry, not 100 (a broadcast herd), and waiters are woken in order of arrival. When the
 * oldest waiter is a mutex/semaphore watcher, the release grants it the lock itself and the message carries the
 * grant (`g <field> <token>`), so the waiter needs no round trip at all; that message goes to the wake channel
 * of the watcher's process alone (one per notifier), so the other processes waiting on the lock sleep on. A message
 * `0` (the Redisson layout, whose unlock names nobody) wakes one local waiter per process instead.
 */
import { randomUUID } from 'node:crypto'
import type { LockKind, ReleaseSubscription } from '../../backend/types.js'
import type { RedisCommander, SubscriberConnection } from './client-adapter.js'
import { ChannelGroup, RedisReleaseSubscription } from './release-subscription.js'

const isQueued = (kind: LockKind): boolean => kind === 'fair' || kind === 'write'
const isFree = (kind: LockKind): boolean => kind === 'mutex' || kind === 'semaphore'

/** Subscribes lazily, wakes one waiter per message, unsubscribes a channel after it has been idle a while. */
export class ReleaseNotifier {
  /**
   * This notifier's own channel: grants to its watchers are published here, not on the lock's channel. Undefined
   * when releases never hand over (the Redisson layout), so no channel outside Redisson's names is subscribed.
   */
  readonly wakeChannel: string | undefined
  private connection: SubscriberConnection | undefined
  /** The SUBSCRIBE of {@link wakeChannel}, once the first channel is listened to. */
  private wakeReady: Promise<void> | undefined
  private readonly groups = new Map<string, ChannelGroup>()
  /** Subscriptions linked to the holder field of their acquire attempt. */
  private readonly links = new Map<string, RedisReleaseSubscription>()
  /** The subscription opened last, claimed by the `tryAcquire` the core issues right after `subscribe`. */
  private unlinked: RedisReleaseSubscription | undefined
  /** Unsubscribes idle channels; runs only while some channel is idle. */
  private sweeper: NodeJS.Timeout | undefined

  constructor(
    private readonly commander: RedisCommander,
    private readonly lingerMs: number,
    handsOver: boolean,
    /** Whether a grant handed over is complete as told (no replicas to wait for): see `takeGrant`. */
    private readonly grantsComplete: boolean,
  ) {
    // Under the `latchkey:` prefix of the lock channels, so an ACL that allows those allows this one.
    // `:s:` tells a release that this process reads a mutex kept as a string key (scripts/handoff-mutex.lua): a
    // waiter of an earlier build (`latchkey:wake:<uuid>`) is handed the lock in the hash it can read.
    this.wakeChannel = handsOver ? `latchkey:wake:s:${randomUUID()}` : undefined
  }

  /**
   * Opens a waiter's subscription. On a channel with local waiters (or lingering after them) it joins them now,
   * since a release may be published before its first try's reply comes back. Otherwise it joins only after a
   * failed try (see {@link waiting}): an uncontended acquire then costs no bookkeeping at all.
   */
  subscribe(channel: string, kind: LockKind): ReleaseSubscription {
    const sub = new RedisReleaseSubscription(channel, kind, (s) => this.detach(s), this.grantsComplete)
    const group = this.groups.get(channel)
    if (group !== undefined) this.join(sub, group)
    // The core tries right after subscribing, in the same synchronous run; a subscription closed before
    // any try is forgotten in detach().
    this.unlinked = sub
    return sub
  }

  /**
   * Links the attempt `field` on `channel` to its subscription (the one opened just before its first try)
   * and returns it, or undefined when this attempt does not wait. A returned subscription has retried now.
   */
  claim(field: string, channel: string): RedisReleaseSubscription | undefined {
    // No linked waiter at all (the uncontended case) needs no lookup of a fresh owner's field.
    let sub = this.links.size === 0 ? undefined : this.links.get(field)
    if (sub === undefined && this.unlinked?.channel === channel && !this.unlinked.closed) {
      sub = this.unlinked
      this.unlinked = undefined
      sub.field = field
      if (sub.group !== undefined) this.links.set(field, sub)
    }
    if (sub !== undefined) sub.owesTry = false
    return sub
  }

  /**
   * Called after a failed try of a waiting attempt: joins the channel's waiters if it has not yet, and
   * subscribes the channel if it is not (lazily, so that uncontended acquires never subscribe). Once SUBSCRIBE
   * is acknowledged every waiter of the channel retries once, since a release published before that would
   * have been missed.
   */
  waiting(sub: RedisReleaseSubscription): void {
    if (sub.closed) return
    if (sub.group === undefined) {
      let group = this.groups.get(sub.channel)
      // Subscribed by another waiter since this one's try was sent: a release in between went unseen here.
      const missed = group?.subscribed === true
      if (group === undefined) {
        group = new ChannelGroup(sub.channel)
        this.groups.set(sub.channel, group)
      }
      this.join(sub, group)
      if (sub.field !== undefined) this.links.set(sub.field, sub)
      if (missed) sub.fire()
    }
    if (sub.group?.ready === undefined) this.listen(sub.group as ChannelGroup)
  }

  /** Handles one message from Redis: `*` wakes all, `g <field> <token>` hands over a grant, else see above. */
  dispatch(channel: string, message: string): void {
    if (channel === this.wakeChannel) {
      if (message.startsWith('g ')) this.grant(message, undefined)
      return
    }
    const group = this.groups.get(channel)
    if (group === undefined || group.subs.size === 0) return
    if (message.startsWith('g ')) {
      this.grant(message, group)
      return
    }
    if (message === '*') {
      for (const sub of group.subs) sub.fire()
      return
    }
    for (const sub of group.subs) if (sub.kind === 'read') sub.fire()
    if (message !== '0') {
      // The message names the one waiter (across all processes) to wake: ours, or nobody here.
      const head = this.links.get(message)
      if (head !== undefined && head.group === group) head.fire()
      return
    }
    for (const sub of group.subs) if (isQueued(sub.kind)) sub.fire()
    this.wakeOne(group)
  }

  /**
   * A grant `g <field> <token>` that a release sent from this process made to one of its watchers, taken from the
   * release's reply (no message was published): wakes that watcher as its message would have.
   */
  handOver(message: string): void {
    this.grant(message, undefined)
  }

  /** `g <field> <token>`: hands the grant to the waiter of `field` (of `group`, when it came on a lock channel). */
  private grant(message: string, group: ChannelGroup | undefined): void {
    const at = message.lastIndexOf(' ')
    const head = this.links.get(message.slice(2, at))
    if (head === undefined || head.group === undefined || (group !== undefined && head.group !== group)) return
    head.granted = message.slice(at + 1)
    head.fire()
  }

  async close(): Promise<void> {
    clearInterval(this.sweeper)
    this.sweeper = undefined
    for (const group of this.groups.values()) for (const sub of group.subs) sub.fire()
    this.groups.clear()
    this.links.clear()
    const connection = this.connection
    this.connection = undefined
    this.wakeReady = undefined
    await connection?.close()
  }

  /** Wakes the longest-waiting mutex/semaphore waiter, or marks the oldest busy one so it does not sleep. */
  private wakeOne(group: ChannelGroup): void {
    const sleeper =
      group.waiting.find((s) => isFree(s.kind)) ??
      [...group.subs].find((s) => isFree(s.kind) && !s.pending && !s.isWaiting)
    sleeper?.fire()
  }

  private join(sub: RedisReleaseSubscription, group: ChannelGroup): void {
    group.idleSince = undefined
    group.subs.add(sub)
    sub.group = group
  }

  private listen(group: ChannelGroup): void {
    this.connection ??= this.commander.openSubscriber(
      (channel, message) => this.dispatch(channel, message),
      // Subscriber errors (mostly reconnect attempts) are not fatal: waits fall back to their timers,
      // and the command connection reports the outage as BackendUnavailableError.
      () => undefined,
    )
    const connection = this.connection
    const wake = this.wakeChannel
    if (wake !== undefined) {
      this.wakeReady ??= connection.subscribe(wake).catch((error: unknown) => {
        this.wakeReady = undefined
        throw error
      })
    }
    group.ready = Promise.all([this.wakeReady, connection.subscribe(group.channel)]).then(
      () => {
        group.subscribed = true
        for (const sub of group.subs) sub.fire()
      },
      () => {
        group.ready = undefined
      },
    )
  }

  private detach(sub: RedisReleaseSubscription): void {
    if (this.unlinked === sub) this.unlinked = undefined
    const { group } = sub
    if (group === undefined) return
    group.subs.delete(sub)
    if (sub.field !== undefined && this.links.get(sub.field) === sub) this.links.delete(sub.field)
    // A woken waiter leaving without retrying (timeout, abort) must not swallow the wake.
    if (sub.owesTry && sub.kind !== 'read') {
      if (isQueued(sub.kind)) for (const other of group.subs) if (isQueued(other.kind)) other.fire()
      this.wakeOne(group)
    }
    if (group.subs.size === 0 && this.groups.get(group.channel) === group) {
      group.idleSince = performance.now()
      this.sweeper ??= setInterval(() => this.sweep(), Math.max(50, this.lingerMs / 2)).unref()
    }
  }

  private sweep(): void {
    const now = performance.now()
    let idle = 0
    for (const group of this.groups.values()) {
      if (group.idleSince === undefined || group.subs.size > 0) continue
      if (now - group.idleSince < this.lingerMs) {
        idle++
        continue
      }
      this.groups.delete(group.channel)
      if (group.subscribed) this.connection?.unsubscribe(group.channel).catch(() => undefined)
    }
    if (idle === 0) {
      clearInterval(this.sweeper)
      this.sweeper = undefined
    }
  }
}
