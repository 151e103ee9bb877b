import { ALL_KINDS, BackendBase, defineCapabilities } from '../../backend/backend-base.js'
import type { ListRequest, LockInspection, LockSummary } from '../../backend/inspection.js'
import type {
  AcquireRequest,
  AcquireResult,
  HolderRef,
  LockRef,
  ReleaseSubscription,
  RenewRequest,
} from '../../backend/types.js'
import { monotonicNow } from '../../core/clock.js'
import { type AcquireDeps, acquireNow } from './acquire.js'
import { type EtcdClient, etcdServers, openEtcdClient, unavailable } from './etcd-client.js'
import { type EtcdInspectDeps, inspectEtcd, listEtcd } from './etcd-inspect.js'
import { findHolder } from './find-holder.js'
import { GoMutexLayout } from './go-mutex-layout.js'
import { type EtcdHolderGuard, holderGuard } from './holder-guard.js'
import { type EtcdKeyLayout, KeyLayout } from './keys.js'
import { Leases } from './leases.js'
import { acquireLined, grantOnWake, refreshNext } from './mutex-line.js'
import { prepareRelease, releaseAndJoin } from './mutex-release-join.js'
import { createdAt, Owners } from './owners.js'
import { acquireQueued } from './queued-acquire.js'
import { renewHolder } from './renew.js'
import { acquireSlot } from './semaphore.js'
import { WatchHub } from './watch-hub.js'

/** Options of {@link etcdBackend}: an etcd3 client (never closed by the backend) or hosts to open one for. */
export type EtcdBackendOptions = (
  | { client: EtcdClient; hosts?: undefined }
  | { hosts: string | readonly string[]; client?: undefined }
) & {
  /**
   * Where locks live. `'latchkey'` (default): `<prefix>/<encoded name>/<kind>/<lease hex>-<owner>`. `'etcd'`: the
   * keys of Go's `concurrency.Mutex` / `etcdctl lock <name>` (`<name>/<lease hex>`, earliest create revision
   * holds), so Go programs and latchkey exclude each other; see `go-mutex-layout.ts`.
   */
  layout?: 'latchkey' | 'etcd'
  /** Key prefix of every lock. Default `latchkey`; in the `etcd` layout none (the lock key is Go's mutex name). */
  prefix?: string
  /** Deadline of each etcd call when the backend opens the client. Default 2 000. */
  callTimeoutMs?: number
}

const CAPABILITIES = defineCapabilities({
  fencing: 'native',
  notifications: 'global',
  kinds: ALL_KINDS,
  // Fair waiters, waiting writers and each process's first waiting mutex keep a key in line.
  waiters: 'queued',
  inspect: true,
  list: true,
})

/**
 * In Go's layout a key does not say which lock or kind it belongs to (`a/b/<lease>` may be a holder of lock `a/b`
 * or of `a`; a mutex, fair and write holder are the same key): no inspect or list there yet.
 */
const GO_LAYOUT_CAPABILITIES = defineCapabilities({ ...CAPABILITIES, inspect: false, list: false })

/**
 * Locks in etcd v3: one key per holder (and per queued fair/write waiter) under `<prefix>/<name>/<kind>/`,
 * each on its owner's own lease; the holder key's create revision is the fencing token. See `acquire.ts` for
 * the algorithm and `index.ts` for the choices made.
 */
export class EtcdBackend extends BackendBase {
  readonly name = 'etcd'
  override readonly capabilities: typeof CAPABILITIES
  readonly layout: EtcdKeyLayout
  private readonly client: EtcdClient
  private readonly ownsClient: boolean
  private readonly deps: AcquireDeps
  private readonly owners = new Owners()
  private readonly leases: Leases
  private readonly hub: WatchHub
  /** The endpoints, named in every `BackendUnavailableError`. */
  readonly server: string

  constructor(options: EtcdBackendOptions) {
    super()
    const callTimeoutMs = options.callTimeoutMs ?? 2_000
    this.ownsClient = options.client === undefined
    const hosts = typeof options.hosts === 'string' ? [options.hosts] : options.hosts && [...options.hosts]
    this.client = options.client ?? openEtcdClient({ hosts: hosts ?? [], callTimeoutMs })
    this.server = etcdServers(hosts, options.client)
    this.layout =
      options.layout === 'etcd' ? new GoMutexLayout(options.prefix) : new KeyLayout(options.prefix ?? 'latchkey')
    this.leases = new Leases(this.client, callTimeoutMs)
    this.hub = new WatchHub(
      this.client,
      this.layout,
      (lockKey, owner) => refreshNext(this.deps, lockKey, owner),
      (request) => this.takeGrant(request),
    )
    this.capabilities = this.layout.name === 'etcd' ? GO_LAYOUT_CAPABILITIES : CAPABILITIES
    this.deps = { client: this.client, layout: this.layout, leases: this.leases, owners: this.owners, hub: this.hub }
  }

  async tryAcquire(request: AcquireRequest): Promise<AcquireResult> {
    const started = monotonicNow()
    this.pruneOwners(started)
    // The core's deadline is `sentAt + ttlMs` with sentAt before this call: a lease living until `until` covers it.
    const until = started + request.ttlMs
    const done = this.hub.tryStarted(request)
    try {
      if (request.kind === 'semaphore') return await acquireSlot(this.deps, request, until)
      if (request.queue) return await acquireQueued(this.deps, request, until)
      const turn = request.kind === 'mutex' ? this.hub.turnOf(request, request.owner) : 'none'
      // A waiting mutex behind another of this process waits its turn without asking etcd (see local-mutex-turns.ts).
      // It comes back within a third of its TTL: once the head, it may have been put in line (its place's lease
      // kept alive by its tries) without a try of its own (WatchHub.granted).
      if (turn === 'behind') return { acquired: false, retryAfterMs: request.ttlMs / 3 }
      // A place in line outlives the watch that knew its turn (etcd cancelled it): it is checked by a read.
      const placed = this.owners.get(request.owner, request.key, request.kind)?.role === 'waiter'
      if (turn === 'none' && !placed) return this.held(request, await acquireNow(this.deps, request, until))
      // The head behind a holder of this process joins etcd's line with that holder's release (release-joins.ts).
      if (turn === 'head' && !placed && this.hub.joinOnRelease(request, until, (l) => this.leases.remainingMs(l) > 0)) {
        this.prepareRelease(request)
        return { acquired: false, retryAfterMs: request.ttlMs / 3 }
      }
      return this.lined(request, await acquireLined(this.deps, request, until))
    } catch (error) {
      throw unavailable(error, `acquiring "${request.key}" (${request.kind})`, this.server)
    } finally {
      done()
    }
  }

  /**
   * What {@link tryAcquire} would answer a woken mutex waiter without a request, or undefined when its answer needs
   * one: the head of this process's waiters whose followed place is first and whose lease is fresh (`grantOnWake`).
   * The subscription's `takeGrant`, so the core sends no try for it.
   */
  private takeGrant(request: AcquireRequest): AcquireResult | undefined {
    if (request.kind !== 'mutex' || request.queue) return undefined
    const started = monotonicNow()
    this.pruneOwners(started)
    if (this.hub.turnOf(request, request.owner) !== 'head') return undefined
    const granted = grantOnWake(this.deps, request, started + request.ttlMs)
    return granted === undefined ? undefined : this.lined(request, granted)
  }

  /** Drops the probes whose lease ran out by `now` (`Owners.prune`): first thing in each try and each wake-up grant. */
  private pruneOwners(now: number): void {
    this.owners.prune(now, (lease) => this.leases.remainingMs(lease))
  }

  /** A lined try's answer: a grant starts its holder's local turn and prepares the release its head joins with. */
  private lined(request: AcquireRequest, answer: AcquireResult): AcquireResult {
    const result = this.held(request, answer)
    if (result.acquired) {
      this.hub.granted(request, request.owner)
      this.prepareRelease(request)
    }
    return result
  }

  /**
   * Builds the release txn of this process's holder of `ref`, with which the head behind it joins etcd's line
   * (`prepareRelease`), once this turn is over: the try that set the join (or the grant before it) answers first.
   * Nothing is scheduled where no head waits to join (a grant with no local waiter behind it).
   */
  private prepareRelease(ref: LockRef): void {
    if (this.hub.pendingJoin(ref) === undefined) return
    setImmediate(() => {
      const pending = this.hub.pendingJoin(ref)
      if (pending === undefined) return
      const holder = this.owners.get(pending.holder, ref.key, 'mutex')
      if (holder?.role === 'holder') prepareRelease(this.deps, holder, pending.join)
    })
  }

  /** Tells the watch hub of a mutex now held in this process (the head behind it joins with its release). */
  private held(request: AcquireRequest, result: AcquireResult): AcquireResult {
    if (!result.acquired || request.kind !== 'mutex') return result
    const state = this.owners.get(request.owner, request.key, request.kind)
    if (state?.role === 'holder') this.hub.holds(request, { owner: request.owner, key: state.key, lease: state.lease })
    return result
  }

  async renew(request: RenewRequest): Promise<boolean> {
    try {
      return await renewHolder(this.deps, request)
    } catch (error) {
      throw unavailable(error, `renewing "${request.key}"`, this.server)
    }
  }

  async release(request: HolderRef): Promise<boolean> {
    try {
      const holder = await findHolder(this.deps, request)
      const join = this.hub.releasing(request, request.owner)
      if (holder === undefined) {
        if (join !== undefined) {
          this.hub.joinSent(join.req, join.req.owner)
          this.hub.wakeOwner(join.req, join.req.owner)
        }
        return false
      }
      this.owners.delete(request.owner)
      if (join !== undefined) return await releaseAndJoin(this.deps, holder, join)
      const res = await this.client.kv.txn({
        compare: [createdAt(holder.key, holder.revision)],
        success: [{ request_delete_range: { key: Buffer.from(holder.key) } }],
      })
      // Our key is gone either way, so the lease carries nothing: keep it for the next acquisition.
      if (holder.lease.ttlS > 0) this.leases.putBack(holder.lease)
      return res.succeeded
    } catch (error) {
      throw unavailable(error, `releasing "${request.key}"`, this.server)
    }
  }

  override async leaveQueue(request: HolderRef): Promise<void> {
    const state = this.owners.get(request.owner, request.key, request.kind)
    this.hub.setPredecessor(request, request.owner, undefined)
    this.hub.unfollow(request, request.owner)
    if (state === undefined || state.role === 'holder') return
    this.owners.delete(request.owner)
    // Revoking the queue lease deletes the waiter's key; if etcd is unreachable the lease runs out by itself.
    try {
      await this.client.leaseClient.leaseRevoke({ ID: state.lease.id })
    } catch (error) {
      throw unavailable(error, `leaving the line of "${request.key}"`, this.server)
    }
  }

  async isLocked(ref: LockRef & { readonly permits: number }): Promise<boolean> {
    try {
      const counts = await Promise.all(
        this.layout
          .stateRanges(ref)
          .map((r) => this.client.kv.range({ key: r.start, range_end: r.end, keys_only: true })),
      )
      const n = counts.reduce((sum, res) => sum + res.kvs.length, 0)
      return ref.kind === 'semaphore' ? n >= ref.permits : n > 0
    } catch (error) {
      throw unavailable(error, `reading "${ref.key}"`, this.server)
    }
  }

  async forceRelease(ref: LockRef): Promise<boolean> {
    try {
      const res = await this.client.kv.txn({
        success: this.layout
          .stateRanges(ref)
          .map((r) => ({ request_delete_range: { key: r.start, range_end: r.end } })),
      })
      return res.responses.some((r) => Number(r.response_delete_range?.deleted ?? 0) > 0)
    } catch (error) {
      throw unavailable(error, `force-releasing "${ref.key}"`, this.server)
    }
  }

  /** Holder keys (token: create revision; expiry: the lease's remaining TTL) and queued waiters (etcd-inspect.ts). */
  override async inspect(key: string): Promise<LockInspection> {
    return inspectEtcd(this.inspectDeps(), key)
  }

  override async list(request: ListRequest): Promise<LockSummary[]> {
    return listEtcd(this.inspectDeps(), request)
  }

  private inspectDeps(): EtcdInspectDeps {
    return { client: this.client, layout: this.layout, server: this.server }
  }

  subscribe(ref: LockRef): ReleaseSubscription {
    return this.hub.subscribe(ref)
  }

  /**
   * A txn guard that holds only while the lease with `token` still holds lock `key` (the namespaced name,
   * `namespace:name`). Rejects with `NotLockHolderError` when that holder key is already gone.
   *
   * @example
   * const guard = await backend.holderGuard({ key: 'shop:order-7', kind: 'mutex', token: lease.token })
   * const res = await client.kv.txn({ compare: [guard.compare], success: [{ request_put: { key, value } }] })
   * if (!res.succeeded) throw new Error('lost the lock before writing')
   */
  async holderGuard(ref: LockRef & { readonly token: bigint }): Promise<EtcdHolderGuard> {
    return holderGuard(this.deps, this.server, ref)
  }

  override async close(): Promise<void> {
    await this.hub.close()
    await this.leases.close()
    this.owners.clear()
    if (this.ownsClient) this.client.close()
  }
}
