/** The public shapes of leader election (`Locks.leader`). */

/** Options of `Locks.leader(name, options)`. */
export interface LeaderOptions {
  /**
   * This participant's id (Curator's participant id, the value of etcd's `Campaign`), carried by its terms and
   * events. Default: a random UUID.
   */
  id?: string
  /**
   * Lease length of each term. A leader that crashes is replaced within about this long; a live one renews every
   * `ttlMs / 3`. Default: `createLocks`' `ttlMs` (itself 30 000).
   */
  ttlMs?: number
  /** Stops contending (and gives up leadership), as `close()` does, when it aborts. */
  signal?: AbortSignal
}

/** One leadership term: granted by one lease of the election's mutex. */
export interface LeaderTerm {
  /** The term's fencing token: higher than every earlier term's, in every process (`0n` on a backend without fencing). */
  readonly token: bigint
  /** Aborts when the term ends: with `LockLostError` when its lease was lost, `LocksClosedError` on `close()`. */
  readonly signal: AbortSignal
  /** When this participant learned it was elected (epoch ms). */
  readonly electedAt: number
  /** The participant's id. */
  readonly id: string
}

/** What `revoked` listeners receive when a term ends. */
export interface LeaderRevoked {
  /** The token of the term that ended. */
  readonly token: bigint
  readonly id: string
  /** `lost`: the lease expired or was taken away (the participant contends again); `closed`: `close()` was called. */
  readonly reason: 'lost' | 'closed'
  /** The term signal's abort reason. */
  readonly error: Error
}

/**
 * A participant in a leader election, contending from its creation until `close()`. At most one participant of a
 * name leads at a time (each term is a lease of the mutex `name`), and each new term has a higher token.
 *
 * @example
 * const leader = locks.leader('scheduler', { ttlMs: 10_000 })
 * leader.on('elected', (term) => runScheduler({ signal: term.signal, fence: term.token }))
 * leader.on('revoked', ({ reason }) => log.warn(`no longer the scheduler: ${reason}`))
 * // ...
 * await leader.close() // gives up leadership at once: another participant takes over
 */
export interface Leader extends AsyncDisposable {
  /** The election's name (the mutex it holds while leading). */
  readonly name: string
  /** This participant's id (`options.id`, or a random UUID). */
  readonly id: string
  /** Whether this participant leads now. */
  readonly isLeader: boolean
  /** The term in progress, while leading. */
  readonly term: LeaderTerm | undefined
  /** The fencing token of the term in progress, while leading. */
  readonly token: bigint | undefined
  /**
   * The current term's signal while leading. Between terms: the last term's (aborted), or, before the first, a
   * signal aborted with `NotLockHolderError`, so work started with it while not leading stops at once.
   */
  readonly signal: AbortSignal
  /** Resolves with the term in progress, or the next one; rejects on `close()` or when `options.signal` aborts. */
  elected(options?: { signal?: AbortSignal }): Promise<LeaderTerm>
  /** Called (synchronously, in order: elected, revoked, elected, ...) when this participant becomes leader. */
  on(event: 'elected', listener: (term: LeaderTerm) => void): this
  /** Called when a term of this participant ends, before its lease is released. */
  on(event: 'revoked', listener: (revoked: LeaderRevoked) => void): this
  off(event: 'elected', listener: (term: LeaderTerm) => void): this
  off(event: 'revoked', listener: (revoked: LeaderRevoked) => void): this
  /**
   * Ends the term in progress (its signal aborts and `revoked` fires first), releases the lease so that another
   * participant is elected at once, and stops contending. Idempotent; resolves once the lease is released.
   */
  close(): Promise<void>
}
