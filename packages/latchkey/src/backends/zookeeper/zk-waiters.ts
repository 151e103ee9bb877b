/**
 * Waiters' side of the backend: binding the core's subscriptions to owners, and routing watch events.
 * One client watcher function serves every path (node-zookeeper-client keeps one listener per function
 * and path), and each event wakes only the entries that watched that path.
 */
import { ZK, type ZkEvent } from './zk-client.js'
import type { ZkConnection } from './zk-connection.js'
import { leaseLost, NO_NODE, type OwnerEntry, type WaitingNode } from './zk-entry.js'
import { firstOnDeletion, moveUp } from './zk-first-in-line.js'
import { listChildren } from './zk-node-ops.js'
import { ZkSubscription } from './zk-subscription.js'
import { DELETED, type WatchHub, watchNodes } from './zk-watch.js'
import { stopWaitTimers, youngLease } from './zk-young-lease.js'

export class ZkWaiters {
  private readonly unbound: ZkSubscription[] = []
  private readonly bound = new Map<string, ZkSubscription>()
  private readonly watched = new Map<string, Set<OwnerEntry>>()
  readonly hub: WatchHub = {
    watcher: (event) => this.onWatch(event),
    arm: (path, entry) => {
      const set = this.watched.get(path) ?? new Set<OwnerEntry>()
      this.watched.set(path, set)
      set.add(entry)
    },
    disarm: (path, entry) => this.watched.get(path)?.delete(entry),
  }

  /**
   * @param isCurrent whether an entry still waits (events for forgotten entries are dropped)
   * @param closed called when the core closes a bound subscription, i.e. stops waiting
   */
  constructor(
    private readonly isCurrent: (entry: OwnerEntry) => boolean,
    private readonly closed: (sub: ZkSubscription) => void,
  ) {}

  /**
   * Forgets the watches of `conn`'s entries: a lost session's watches never fire, so their routes would stay (with
   * the entries) for as long as the backend lives.
   */
  forgetSession(conn: ZkConnection): void {
    for (const [path, entries] of this.watched) {
      for (const entry of entries) if (entry.conn === conn) entries.delete(entry)
      if (entries.size === 0) this.watched.delete(path)
    }
  }

  /**
   * A new subscription. With `owner` (the waiter whose tries follow) it is bound at once. Without, it stays
   * unbound until the next `claim` for its key in the same tick: the core subscribes and makes its first try
   * synchronously one after the other. Unclaimed, it drops out at the next microtask and only times out (the
   * core then polls).
   */
  subscribe(key: string, owner?: string): ZkSubscription {
    const sub = new ZkSubscription(key, (s) => {
      this.unclaim(s)
      this.closed(s)
      this.unbind(s)
    })
    if (owner !== undefined) {
      sub.owner = owner
      this.bound.set(owner, sub)
      return sub
    }
    this.unbound.push(sub)
    queueMicrotask(() => this.unclaim(sub))
    return sub
  }

  /**
   * The subscription of `owner`: the one already bound to it (kept across a failed first try), else the
   * newest unbound subscription of `key`, which becomes bound to `owner` until it is closed.
   */
  claim(key: string, owner: string): ZkSubscription | undefined {
    const bound = this.bound.get(owner)
    if (bound !== undefined) return bound
    for (let i = this.unbound.length - 1; i >= 0; i--) {
      const sub = this.unbound[i] as ZkSubscription
      if (sub.key === key) {
        this.unbound.splice(i, 1)
        sub.owner = owner
        this.bound.set(owner, sub)
        return sub
      }
    }
    return undefined
  }

  private unclaim(sub: ZkSubscription): void {
    const i = this.unbound.indexOf(sub)
    if (i >= 0) this.unbound.splice(i, 1)
  }

  private unbind(sub: ZkSubscription): void {
    if (sub.owner !== undefined && this.bound.get(sub.owner) === sub) this.bound.delete(sub.owner)
  }

  private onWatch(event: ZkEvent): void {
    const entries = this.watched.get(event.path)
    if (entries === undefined) return
    this.watched.delete(event.path)
    const name = event.path.slice(event.path.lastIndexOf('/') + 1)
    for (const entry of entries) {
      entry.watching.delete(name)
      if (!this.isCurrent(entry)) continue
      const { node } = entry
      if (node.is === 'held') {
        // A holder watches only its own node (see `watchLease`); older waiting-time watches are stale.
        if (event.path === `${entry.parent}/${node.name}`) this.ownNodeEvent(entry, event, name)
        continue
      }
      if (event.type === ZK.NODE_DATA_CHANGED && node.is === 'waiting' && !node.wakeOnChange) {
        // The node ahead only started or renewed its lease: watch it again and stay asleep (no spurious wake).
        const node = { name, owner: '', kind: entry.kind, order: '' }
        void watchNodes(entry, [node], this.hub, event.path.slice(0, event.path.lastIndexOf('/')), true).then(
          (gone) => gone && this.wake(entry),
          () => this.wake(entry),
        )
      } else {
        if (event.type === ZK.NODE_DELETED && node.is === 'waiting') {
          if (name === node.name) {
            // Our own node, watched while we wait (zk-first-in-line.ts): deleted meanwhile, so the next try takes a
            // new place in line.
            stopWaitTimers(node)
            entry.node = NO_NODE
          } else if (firstOnDeletion(entry, node, name)) {
            node.first = true // first now: granted with no listing
          } else if (name === node.twoAhead && !node.woken) {
            this.moveUpWithoutTry(entry, node)
            continue
          } else {
            this.listAhead(entry)
          }
        }
        this.wake(entry)
      }
    }
  }

  /**
   * A waiter woken by the deletion of the node ahead is most likely first now, and its next try is then granted on
   * one listing of the line while its node keeps the young lease of its create (zk-young-lease.ts). That listing is
   * sent now, from the watch event, instead of after the core has woken and called again: the request is out while
   * the wake-up runs. The try takes it only where it would send the same listing itself; a listing sent after the
   * event shows the line as it is since that deletion, as one sent by the try would.
   */
  private listAhead(entry: OwnerEntry): void {
    const { node } = entry
    if (node.is !== 'waiting' || node.wakeOnChange || node.listing !== undefined || node.created === undefined) return
    if (youngLease(entry, node, node.created.ttlMs) === undefined) return
    const listing = listChildren(entry.conn, entry.parent)
    listing.catch(() => undefined)
    node.listing = listing
  }

  /**
   * The node two ahead of a waiter's went: it moves up in line without a try of the core (zk-first-in-line.ts). Not
   * at once: that deletion also woke the waiter next in line, which may be in this process, and its grant (the
   * wake-up's microtasks) goes first; this listing only readies the next handoff, a hold later. The listing is still
   * sent after the event, which is what moveUp needs.
   */
  private moveUpWithoutTry(entry: OwnerEntry, node: WaitingNode): void {
    setImmediate(() => {
      if (entry.node === node && !node.woken && this.isCurrent(entry)) this.moveUpNow(entry, node)
    })
  }

  private moveUpNow(entry: OwnerEntry, node: WaitingNode): void {
    moveUp(entry, node).then(
      (moved) => {
        if (moved === 'wake') this.wake(entry)
        else if (moved !== 'none' && moved.retryAfterMs !== undefined && entry.node === node && this.isCurrent(entry)) {
          clearTimeout(node.judgeTimer)
          // A try to judge the holder, not a release: the try must not take it for a wake (no lease write).
          node.judgeTimer = setTimeout(() => {
            if (entry.node === node && this.isCurrent(entry)) entry.sub?.fire()
          }, moved.retryAfterMs)
          node.judgeTimer.unref()
        }
      },
      () => this.wake(entry),
    )
  }

  private wake(entry: OwnerEntry): void {
    if (entry.node.is === 'waiting') entry.node.woken = true
    entry.sub?.fire()
  }

  /** The holder's own node changed: our renewal (watch again) or its deletion behind our back (lease lost). */
  private ownNodeEvent(entry: OwnerEntry, event: ZkEvent, name: string): void {
    if (event.type === ZK.NODE_DELETED) {
      leaseLost(entry, DELETED)
      return
    }
    const node = { name, owner: '', kind: entry.kind, order: '' }
    void watchNodes(entry, [node], this.hub, entry.parent, true).then(
      (gone) => gone && leaseLost(entry, DELETED),
      () => undefined,
    )
  }
}
