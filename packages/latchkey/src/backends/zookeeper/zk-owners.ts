/**
 * The owners one backend knows: for each owner id, its entry (the lock, the session, the node it holds or waits
 * with). Forgetting an owner is the same few steps wherever it happens: the waiter gave up, the core closed its
 * subscription, its session was lost.
 */
import { stateKey } from '../../backend/grant-rules.js'
import type { AcquireRequest, HolderRef } from '../../backend/types.js'
import type { ZkConnection } from './zk-connection.js'
import { type HeldEntry, leaseLost, NO_NODE, nameOf, type OwnerEntry } from './zk-entry.js'
import type { ZkLayout } from './zk-layout.js'
import { removeOwnNode } from './zk-node-ops.js'
import type { ZkParents } from './zk-parents.js'
import type { ZkSubscription } from './zk-subscription.js'
import { stopWaitTimers } from './zk-young-lease.js'

export class ZkOwners {
  private readonly entries = new Map<string, OwnerEntry>()

  /** @param abandon hands the paths of a lost session's nodes to the next session, which deletes them */
  constructor(
    private readonly parents: ZkParents,
    private readonly abandon: (paths: string[]) => void,
  ) {}

  get(owner: string): OwnerEntry | undefined {
    return this.entries.get(owner)
  }

  /** Whether `entry` is still the owner's (events for forgotten entries are dropped). */
  isCurrent(entry: OwnerEntry): boolean {
    return this.entries.get(entry.owner) === entry
  }

  /** A new entry for the owner of `request`, with no node yet, registered. */
  add(
    request: AcquireRequest,
    key: string,
    conn: ZkConnection,
    sub: ZkSubscription | undefined,
    root: string,
    layout: ZkLayout,
  ): OwnerEntry {
    const gate = layout.gateParent(root, request)
    const entry: OwnerEntry = {
      owner: request.owner,
      key,
      kind: request.kind,
      permits: request.permits,
      parent: layout.nodesParent(root, request),
      layout,
      gate: gate === undefined ? undefined : { parent: gate, name: undefined, unsure: false },
      conn,
      node: NO_NODE,
      sub,
      givenUp: false,
      watching: new Set(),
    }
    this.entries.set(request.owner, entry)
    return entry
  }

  /** Unregisters the owner (its node, if any, is the caller's to delete). */
  delete(owner: string): void {
    this.entries.delete(owner)
  }

  /** The entry of `ref` if it holds that lock. */
  held(ref: HolderRef): HeldEntry | undefined {
    const entry = this.entries.get(ref.owner)
    if (entry === undefined || entry.node.is !== 'held' || entry.key !== stateKey(ref)) return undefined
    return entry as HeldEntry
  }

  /** Forgets an entry, leaving its node alone. */
  forget(entry: OwnerEntry): false {
    stopWaitTimers(entry.node)
    if (this.entries.get(entry.owner) === entry) this.entries.delete(entry.owner)
    return false
  }

  /** Forgets an entry and deletes its node (the delete is queued at once, so later calls see it done). */
  drop(entry: OwnerEntry): Promise<void> {
    this.forget(entry)
    const gated = entry.gate !== undefined && (entry.gate.name !== undefined || entry.gate.unsure)
    if ((entry.node.is === 'none' && !gated) || !entry.conn.alive) return Promise.resolve()
    this.parents.emptied(entry.parent)
    if (entry.gate !== undefined) this.parents.emptied(entry.gate.parent)
    // With a known name the delete is queued synchronously, before anything the caller does next.
    return removeOwnNode(entry).then(
      () => undefined,
      () => undefined,
    )
  }

  /** The core closed `sub`: its owner stops waiting. */
  subClosed(sub: ZkSubscription): void {
    const entry = sub.owner === undefined ? undefined : this.entries.get(sub.owner)
    if (entry === undefined || entry.sub !== sub) return
    entry.sub = undefined
    // The core closes the subscription when it stops waiting: give up the place in line now (the delete
    // is queued on the session before anything the caller does next).
    if (entry.node.is !== 'held') void this.giveUp(entry)
  }

  /** The core gave the wait of `entry` up: it is dropped, and a try still out then keeps nothing (tryAcquire). */
  giveUp(entry: OwnerEntry): Promise<void> {
    entry.givenUp = true
    return this.drop(entry)
  }

  /** `conn` is lost: its nodes go to the next session to delete; its holders and waiters are told. */
  lost(conn: ZkConnection): void {
    const lost = [...this.entries.values()].filter((e) => e.conn === conn)
    const paths = lost.flatMap((e) => {
      const name = nameOf(e)
      const gate = e.gate?.name === undefined ? [] : [`${e.gate.parent}/${e.gate.name}`]
      return name === undefined ? gate : [`${e.parent}/${name}`, ...gate]
    })
    this.abandon(paths)
    // Waiters retry at once on a new session; holders are told now if they watch, else at their next renewal.
    for (const entry of lost) {
      if (entry.node.is === 'held') leaseLost(entry, `its ZooKeeper session was lost (${conn.lostReason ?? 'unknown'})`)
      else entry.sub?.fire()
    }
  }

  /** Every entry, all forgotten (the backend closes). */
  takeAll(): OwnerEntry[] {
    const all = [...this.entries.values()]
    this.entries.clear()
    return all
  }
}
