/** The statements of the SQL `'table'` strategy, as each dialect writes them. */

/**
 * The `'table'` statements. Parameters come in the same order in every dialect, so the backend passes one
 * list of values to either; the dialect writes `?` or `$n`. A key is always `encodeKey(key)`, owners are
 * text, `notifyArgs` stands for the values the dialect's notifier appends (`TableNotifier.args`).
 */
export interface TableStatements {
  /** (key): creates the lock's serialisation row if it is missing; takes no lock that outlives it. */
  readonly ensureKey: string
  /** (key): `fence`, `seq`, `now` of the lock row, locked. */
  readonly lockKey: string
  /** (key): `owner, kind, expiresAt, delayUntil, token, permits, now` of every holder row, locked. */
  readonly holders: string
  /** (key): `owner, kind, seq, expiresAt` of every waiter row, locked. */
  readonly waiters: string
  /** (key, owners[]). */
  readonly deleteHolders: string
  /** (key, owners[]). */
  readonly deleteWaiters: string
  /** (key, owner, kind, expiresAt, delayUntil, token, permits). */
  readonly insertHolder: string
  /** (key, owner, kind, seq, expiresAt): a second call only moves `expiresAt`. */
  readonly upsertWaiter: string
  /** (fence, seq, key). */
  readonly saveCounters: string
  /** (ttlMs, ttlMs, key, owner): matches one row while the lease is live. */
  readonly renew: string
  /** (key, owner, ...notifyArgs): deletes a live holder row. */
  readonly release: string
  /** (key, owner, ...notifyArgs): deletes a waiter row. */
  readonly leave: string
  /** (owner, key): `n, firstFree, lastFree, mine, now, permits` of the occupying holders, read without locks. */
  readonly summary: string
  /** (key): `n`, the holders still occupying a slot. */
  readonly countLive: string
  /** (key). */
  readonly dropHolders: string
  /** (key). */
  readonly dropWaiters: string
  /** (...notifyArgs): announces a forced release inside its transaction; none where the notifier wakes locally. */
  readonly notify?: string
}

/**
 * A dialect's statements with `NOW_MS` replaced by its expression of the database clock in epoch milliseconds
 * (every lease time is read from the server, never from a client's clock).
 *
 * @example
 * const SQL = withClock({ countLive: 'SELECT ... WHERE delay_until > NOW_MS', ... }, NOW_MS)
 */
export function withClock<S extends Record<keyof S, string>>(
  raw: S,
  nowMs: string,
): { readonly [K in keyof S]: string } {
  return Object.freeze(
    Object.fromEntries(Object.entries<string>(raw).map(([k, v]) => [k, v.replaceAll('NOW_MS', nowMs)])),
  ) as { readonly [K in keyof S]: string }
}
