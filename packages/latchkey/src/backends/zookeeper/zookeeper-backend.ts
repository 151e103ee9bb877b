import { ALL_KINDS, BackendBase, defineCapabilities } from '../../backend/backend-base.js'
import { stateKey } from '../../backend/grant-rules.js'
import type { ListRequest, LockInspection, LockSummary } from '../../backend/inspection.js'
import type {
  AcquireRequest,
  AcquireResult,
  HolderRef,
  LockRef,
  ReleaseSubscription,
  RenewRequest,
} from '../../backend/types.js'
import { type AttemptDeps, attempt, keeps } from './zk-attempt.js'
import { readLong, type ZkClient } from './zk-client.js'
import type { ConnectionState } from './zk-connection.js'
import { attemptCuratorSemaphore } from './zk-curator-semaphore.js'
import { nameOf } from './zk-entry.js'
import { confirmFirst } from './zk-first-in-line.js'
import { clearLock } from './zk-force-release.js'
import { lockState } from './zk-inspect.js'
import type { ZkLayout } from './zk-layout.js'
import { listChildren, removeOwnNode, removeQuietly, writeLease } from './zk-node-ops.js'
import { inspectZk, listZk } from './zk-operator.js'
import { ZkOwners } from './zk-owners.js'
import { ZkParents } from './zk-parents.js'
import { ZkSessions } from './zk-sessions.js'
import { ZkWaiters } from './zk-waiters.js'
import { guardLease } from './zk-watch.js'
import { stopWaitTimers } from './zk-young-lease.js'

/** Resolved options of {@link ZookeeperBackend}. */
export interface ZookeeperSettings {
  readonly connectString: string | undefined
  readonly client: ZkClient | undefined
  readonly sessionTimeoutMs: number
  readonly connectTimeoutMs: number
  /** `h1:2181,h2:2181`, named in errors. */
  readonly server: string
  /** `''` for the top level. */
  readonly root: string
  readonly lockNodeIdleMs: number
  /** How nodes are named and where they live: latchkey's, or Apache Curator's recipes'. */
  readonly layout: ZkLayout
}

// lockDelay stays false: a crashed holder's session expiry deletes its ephemeral node on the server at once, and
// nothing can delay that.
const CAPABILITIES = defineCapabilities({
  fencing: 'native',
  notifications: 'global',
  kinds: ALL_KINDS,
  // Every waiting acquire keeps a node in line.
  waiters: 'all',
  inspect: true,
  list: true,
})

/**
 * How long a lease lives before its holder watches its own node. The watch tells the holder at once that its node
 * was deleted behind its back; only forceRelease can do that to a lease this young (a contender judges a lease
 * expired only after its TTL), and a forceRelease meanwhile is told when the watch is set (its node is gone then).
 * A watch set at the grant fires on the holder's own delete as well: one request and one event per acquisition that
 * a short hold (and Curator's InterProcessMutex, which keeps no such watch) does without. A lease granted on the
 * deletion event is checked against a listing then too, for the same reason (zk-first-in-line.ts).
 */
const GUARD_AFTER_MS = 100

/** Curator's paths are the lock keys themselves, nested at each `/`: no flat list of names to read. */
const CURATOR_CAPABILITIES = defineCapabilities({ ...CAPABILITIES, list: false })

/**
 * Curator-style locks on ZooKeeper: one protected EPHEMERAL_SEQUENTIAL node per lease attempt, the lowest
 * eligible node holds, waiters watch only their predecessor. See `index.ts` for the semantics.
 */
export class ZookeeperBackend extends BackendBase {
  readonly name = 'zookeeper'
  override readonly capabilities: typeof CAPABILITIES
  private readonly owners: ZkOwners
  private readonly parents: ZkParents
  private readonly sessions: ZkSessions
  private readonly waiters = new ZkWaiters(
    (entry) => this.owners.isCurrent(entry),
    (sub) => this.owners.subClosed(sub),
  )

  private readonly deps: AttemptDeps = {
    ensureParent: (conn, path) => this.parents.ensure(conn, path),
    hub: this.waiters.hub,
    drop: (entry) => this.owners.drop(entry),
    emptied: (path) => this.parents.emptied(path),
  }

  constructor(private readonly settings: ZookeeperSettings) {
    super()
    this.capabilities = settings.layout.name === 'curator' ? CURATOR_CAPABILITIES : CAPABILITIES
    this.sessions = new ZkSessions(settings, (conn) => {
      this.waiters.forgetSession(conn)
      this.owners.lost(conn)
    })
    this.parents = new ZkParents(() => this.sessions.live, settings.lockNodeIdleMs, settings.root)
    this.owners = new ZkOwners(this.parents, (paths) => this.sessions.abandon(paths))
  }

  async tryAcquire(request: AcquireRequest): Promise<AcquireResult> {
    // The curator layout's paths come from the key: a key that is no znode path fails here, before any I/O.
    this.lockPath(request)
    const key = stateKey(request)
    let entry = this.owners.get(request.owner)
    // Bound synchronously: the core opens its subscription right before its first try (see subscribe).
    const sub = entry === undefined ? this.waiters.claim(key, request.owner) : entry.sub
    const conn = await this.sessions.current()
    if (entry !== undefined && !entry.conn.alive) entry = undefined
    if (entry === undefined) entry = this.owners.add(request, key, conn, sub, this.settings.root, this.settings.layout)
    try {
      const result =
        entry.gate !== undefined
          ? await attemptCuratorSemaphore(entry, request, this.deps)
          : await attempt(entry, request, this.deps)
      if (!entry.givenUp) return result
      // The core gave the wait up while this try was out (its deadline came with the try still out, or the caller
      // aborted): the entry was dropped, which deleted the node it had then. The try may since have taken a new
      // place (its listing found that node gone) or been granted on it: nobody would delete that node, which would
      // stay in line, or hold the lock, until the session ends. It goes now, as any drop does (the timers the try
      // set stop, a Curator semaphore's gate node goes too, the lock node may be emptied), and the try grants
      // nothing (the core gives an abandoned grant back through `release`, which no longer finds this owner).
      await this.owners.drop(entry)
      return { acquired: false }
    } catch (error) {
      if (entry.node.is !== 'held' && !keeps(entry, request)) void this.owners.drop(entry)
      throw error
    }
  }

  async renew(request: RenewRequest): Promise<boolean> {
    const entry = this.owners.held(request)
    if (entry === undefined) return false
    const { node } = entry
    const previous = node.lease
    let stat: Awaited<ReturnType<typeof writeLease>>
    try {
      stat = await writeLease(entry, request.ttlMs)
    } catch (error) {
      if (!entry.conn.alive) return this.owners.forget(entry)
      throw error
    }
    if (stat === undefined) return this.owners.forget(entry)
    const mtime = Number(readLong(stat.mtime))
    // Renewed too late by the server's clock: the lease had run out and someone may have taken over.
    if (previous.mtime + previous.ttlMs < mtime) {
      this.owners.drop(entry)
      return false
    }
    node.lease = { mtime, ttlMs: request.ttlMs }
    return true
  }

  async release(request: HolderRef): Promise<boolean> {
    const entry = this.owners.held(request)
    if (entry === undefined) return false
    this.owners.delete(entry.owner)
    if (!entry.conn.alive) return false
    const removed = await removeQuietly(entry.conn, `${entry.parent}/${entry.node.name}`)
    this.parents.emptied(entry.parent)
    return removed
  }

  override async leaveQueue(request: HolderRef): Promise<void> {
    const entry = this.owners.get(request.owner)
    if (entry !== undefined && entry.node.is !== 'held') await this.owners.giveUp(entry)
  }

  async isLocked(ref: LockRef & { readonly permits: number }): Promise<boolean> {
    const { settings } = this
    const parent = settings.layout.nodesParent(settings.root, ref)
    const state = await lockState(await this.sessions.current(), parent, ref.permits, settings.layout.parse)
    return ref.kind === 'semaphore' ? state.live >= ref.permits : state.live > 0
  }

  /** The lock nodes' children as holders and waiters (zk-operator.ts). */
  override async inspect(key: string): Promise<LockInspection> {
    return inspectZk(await this.sessions.current(), this.settings.root, key, this.settings.layout)
  }

  override async list(request: ListRequest): Promise<LockSummary[]> {
    return listZk(await this.sessions.current(), this.settings.root, request)
  }

  async forceRelease(ref: LockRef): Promise<boolean> {
    const { root, layout } = this.settings
    layout.nodesParent(root, ref) // a key that is no znode path fails before any I/O
    return clearLock(await this.sessions.current(), layout, root, ref)
  }

  /**
   * Calls `onLost` once if the lease of `holder` is lost before it is released: its session is lost (our
   * liveness check, or expiry) or its node is deleted behind its back. Returns a function that stops watching.
   * The core calls it for every lease it grants (the contract's optional `watchLease`): a holder learns of a
   * lost session within the session timeout even when its renewals are further apart.
   */
  watchLease(holder: HolderRef, onLost: (reason: string) => void): () => void {
    const entry = this.owners.held(holder)
    if (entry === undefined || !entry.conn.alive) {
      queueMicrotask(() => onLost('it is not held'))
      return () => undefined
    }
    const { node } = entry
    if (node.lost !== undefined) {
      const reason = node.lost
      queueMicrotask(() => onLost(reason))
      return () => undefined
    }
    node.onLeaseLost = onLost
    // The own-node watch is armed only once the lease has lived GUARD_AFTER_MS (see there): a shorter hold costs
    // neither its request nor the event its own delete would fire.
    const guard = setTimeout(() => {
      if (entry.node === node && node.onLeaseLost === onLost && this.owners.isCurrent(entry)) {
        guardLease(entry, this.waiters.hub)
        if (node.unconfirmed) confirmFirst(entry, listChildren(entry.conn, entry.parent))
      }
    }, GUARD_AFTER_MS)
    guard.unref()
    return () => {
      clearTimeout(guard)
      if (node.onLeaseLost === onLost) node.onLeaseLost = undefined
    }
  }

  /**
   * Opens a subscription fed by one waiter's own watch, so one release wakes exactly one waiter. The waiter is
   * `owner` (the core always passes it), else the one whose first `tryAcquire` follows in the
   * same tick, which is the core's order.
   */
  subscribe(ref: LockRef, owner?: string): ReleaseSubscription {
    return this.waiters.subscribe(stateKey(ref), owner)
  }

  override async close(): Promise<void> {
    const conn = await this.sessions.close()
    const entries = this.owners.takeAll()
    for (const entry of entries) stopWaitTimers(entry.node)
    for (const entry of entries) entry.sub?.fire()
    const parents = new Set([...this.parents.drain(), ...entries.map((e) => e.parent)])
    if (conn === undefined) return
    if (conn.alive) {
      // Our nodes first (a client handed to us outlives the backend), then the lock nodes they leave empty.
      const ours = entries.filter((e) => e.conn === conn && (nameOf(e) !== undefined || e.gate?.name !== undefined))
      await Promise.all(ours.map((e) => removeOwnNode(e).catch(() => undefined)))
      for (const e of entries) if (e.gate !== undefined) parents.add(e.gate.parent)
      await Promise.all([...parents].map((p) => this.parents.removeEmpty(conn, p).catch(() => false)))
    }
    await conn.close()
  }

  /**
   * Health of the current session as our liveness check sees it: `suspended` after 2/3 of the session timeout
   * without a server reply, `none` when there is no session (never opened, lost, or closed).
   */
  get sessionState(): ConnectionState | 'none' {
    return this.sessions.live?.state ?? 'none'
  }

  /** The znode path of a lock: the parent of its nodes (Curator's semaphore: the recipe's base path). */
  lockPath(ref: LockRef): string {
    return this.settings.layout.lockPath(this.settings.root, ref)
  }
}
