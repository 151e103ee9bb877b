/**
 * Per-owner etcd leases. Each attempt (owner id) gets its own lease, so a lock's `ttlMs`, `renew()` and expiry
 * belong to that lock alone; the lease's remaining life is tracked locally from the time each grant or keepalive
 * was *sent*, a lower bound of what etcd holds, so a lease is only reused while it outlives the requested TTL.
 */
import { monotonicNow } from '../../core/clock.js'
import type { EtcdClient } from './etcd-client.js'
import { KeepAlives } from './keepalive.js'

/** A granted lease as this process knows it. */
export interface OwnerLease {
  readonly id: string
  /** The TTL asked for, in seconds (the spare pool's key). */
  readonly asked: number
  /** Granted TTL in seconds (etcd may raise a small request to its minimum). */
  readonly ttlS: number
  /** Monotonic ms when the last grant / acknowledged keepalive was sent. */
  refreshedAt: number
}

/** etcd lease TTLs are whole seconds: the smallest TTL not shorter than `ms`. */
export function ttlSeconds(ms: number): number {
  return Math.max(1, Math.ceil(ms / 1_000))
}

/**
 * How much shorter than `ttlMs` a lease may be to be granted as it stands, timed from its last refresh instead of
 * refreshed first: 5% of it, at most 500 ms.
 */
export function freshSlackMs(ttlMs: number): number {
  return Math.min(ttlMs / 20, 500)
}

/** How long `close()` waits for outstanding revokes. */
const REVOKE_WAIT_MS = 1_000

/** Spare leases kept per TTL: enough for a burst of acquisitions by one backend. */
const MAX_SPARE = 16

/**
 * Grants, refreshes and revokes leases for one backend. A lease whose key was released is kept as a spare for
 * the next acquisition asking for the same TTL: a keepalive (answered by the leader from memory) is cheaper than
 * a grant and a revoke (two raft writes), and a spare that outlives the new TTL needs neither.
 */
export class Leases {
  private readonly revoking = new Set<Promise<unknown>>()
  private readonly spare = new Map<number, OwnerLease[]>()

  private readonly keepAlives: KeepAlives

  constructor(
    private readonly client: EtcdClient,
    callTimeoutMs: number,
  ) {
    this.keepAlives = new KeepAlives(client, callTimeoutMs)
  }

  /** Grants a lease of at least `ttlS` seconds. */
  async grant(ttlS: number): Promise<OwnerLease> {
    const refreshedAt = monotonicNow()
    const granted = await this.client.leaseClient.leaseGrant({ TTL: ttlS })
    return { id: granted.ID, asked: ttlS, ttlS: Math.max(ttlS, Number(granted.TTL)), refreshedAt }
  }

  /**
   * A lease of `ttlS` seconds certain to live until monotonic time `until`: a spare one (refreshed when needed)
   * or a new one. Callers pass `until = <start of their call> + ttlMs`, which bounds the core's own deadline.
   */
  async take(ttlS: number, until: number): Promise<OwnerLease> {
    const list = this.spare.get(ttlS) ?? []
    for (let lease = list.pop(); lease !== undefined; lease = list.pop()) {
      if (this.outlives(lease, until)) return lease
      if (this.remainingMs(lease) > 0 && (await this.refresh(lease)) && this.outlives(lease, until)) return lease
    }
    return this.grant(ttlS)
  }

  /**
   * Like {@link take}, without waiting for the keepalive a spare may need (nor sending it, without `refresh`):
   * that keepalive is sent now and its
   * answer comes as `refreshed`, so that the caller's txn travels beside it instead of after it (an uncontended
   * acquisition is then one round trip, not two). The caller must await `refreshed` before relying on the lease:
   * true means the lease lives until `until` (the keepalive was sent after the caller's start); false, that etcd
   * no longer had it, so a key just put on it is gone too. With `ttlMs`, a spare fresh enough for a grant of it
   * as it stands ({@link freshGrantAt}) comes without a keepalive either.
   */
  async takeSoon(
    ttlS: number,
    until: number,
    refresh = true,
    ttlMs?: number,
  ): Promise<{ lease: OwnerLease; refreshed?: Promise<boolean> }> {
    const list = this.spare.get(ttlS) ?? []
    for (let lease = list.pop(); lease !== undefined; lease = list.pop()) {
      if (this.outlives(lease, until)) return { lease }
      if (this.remainingMs(lease) <= 0) continue
      // Without `refresh` the caller refreshes later, if it needs to (the lease is alive for now).
      const fresh = ttlMs !== undefined && this.freshGrantAt(lease, ttlMs) !== undefined
      return refresh && !fresh ? { lease, refreshed: this.refreshSoon(lease) } : { lease }
    }
    return { lease: await this.grant(ttlS) }
  }

  /** A keepalive whose failure is handled where it is awaited (never an unhandled rejection meanwhile). */
  refreshSoon(lease: OwnerLease): Promise<boolean> {
    const refreshed = this.refresh(lease)
    refreshed.catch(() => undefined)
    return refreshed
  }

  /** Whether etcd keeps the lease at least until monotonic time `until`. */
  outlives(lease: OwnerLease, until: number): boolean {
    return lease.refreshedAt + lease.ttlS * 1_000 >= until
  }

  /**
   * For a grant of `ttlMs` on a live `lease` (a key was just put on it, or is on it) that does not outlive the
   * caller's deadline: the instant to time the caller's lease from, when the lease lacks at most
   * {@link freshSlackMs} of `ttlMs`, so that no keepalive is needed; undefined when it lacks more. The caller's
   * lease then ends (`grantedAt + ttlMs`) exactly when etcd's lease ends at the earliest by this process's
   * reckoning (timed from when its last grant or keepalive was sent), and `grantedAt` is in the past: the lease
   * does not outlive a deadline `ttlMs` from now.
   */
  freshGrantAt(lease: OwnerLease, ttlMs: number): number | undefined {
    if (this.remainingMs(lease) < ttlMs - freshSlackMs(ttlMs)) return undefined
    return lease.refreshedAt + lease.ttlS * 1_000 - ttlMs
  }

  /** Keeps a lease that carries no key any more for a later `take`, or revokes it. */
  putBack(lease: OwnerLease): void {
    const list = this.spare.get(lease.asked) ?? []
    if (this.remainingMs(lease) <= 0) return
    if (list.length >= MAX_SPARE) {
      this.revokeLater(lease)
      return
    }
    list.push(lease)
    this.spare.set(lease.asked, list)
  }

  /** Milliseconds the lease is certain to live on the server. */
  remainingMs(lease: OwnerLease): number {
    return lease.refreshedAt + lease.ttlS * 1_000 - monotonicNow()
  }

  /** One keepalive; false when etcd no longer has the lease (answered TTL <= 0). */
  async refresh(lease: OwnerLease): Promise<boolean> {
    const sentAt = monotonicNow()
    const ttl = await this.keepAlives.once(lease.id)
    if (ttl <= 0) return false
    lease.refreshedAt = sentAt
    return true
  }

  /** Revokes in the background (deleting the lease's keys); failures only mean the lease expires by itself. */
  revokeLater(lease: OwnerLease | undefined): void {
    if (lease === undefined) return
    const done: Promise<unknown> = this.client.leaseClient
      .leaseRevoke({ ID: lease.id })
      .catch(() => undefined)
      .finally(() => this.revoking.delete(done))
    this.revoking.add(done)
  }

  /** Revokes the spare leases, ends the keepalive stream and waits (boundedly) for background revokes. */
  async close(): Promise<void> {
    this.keepAlives.close()
    for (const list of this.spare.values()) for (const lease of list) this.revokeLater(lease)
    this.spare.clear()
    if (this.revoking.size === 0) return
    let timer: NodeJS.Timeout | undefined
    await Promise.race([
      Promise.all(this.revoking),
      new Promise((resolve) => {
        timer = setTimeout(resolve, REVOKE_WAIT_MS)
      }),
    ])
    clearTimeout(timer)
  }
}
