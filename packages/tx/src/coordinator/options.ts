import type { Locks } from 'latchkey'
import type { TxStore } from '../store/types.js'
import type { TxEvent } from '../types.js'
import type { XaPool } from '../xa/resource.js'

/** Retries of a failing branch: capped exponential backoff with jitter, then the transaction is `parked`. */
export interface RetryPolicy {
  /** Delay before the second attempt. Default 1 000. */
  readonly firstMs: number
  /** Longest delay. Default 60 000. */
  readonly maxMs: number
  /** Attempts of one operation before parking. Default 12. */
  readonly attempts: number
}

/** Options of `createCoordinator`. */
export interface CoordinatorOptions {
  /** The durable log: a {@link TxStore} or a URL (`sqlite:./tx.db`, `postgres://…`, `mysql://…`). */
  store: TxStore | string
  /**
   * A latchkey `Locks` with fencing tokens for the recovery leases. Default: row leases kept on each transaction's
   * own log row (its fencing token and lease expiry, written by the log writes themselves; a store without them
   * falls back to latchkey's backend on the store's database). With `locks`, every coordinator sharing a log must
   * use the same backend and namespace, or they would not exclude each other.
   */
  locks?: Locks
  retry?: Partial<RetryPolicy>
  /** Forward-phase deadline of a TCC transaction; past it the transaction aborts. Default 30 000. */
  timeoutMs?: number
  /** Whether this process sweeps unfinished transactions (any number of coordinators may). Default true. */
  recover?: boolean
  /** How often the recovery sweep runs. Default 1 000. */
  recoverEveryMs?: number
  /**
   * Length of the lease a coordinator holds on each transaction it drives: extended by every log write, renewed
   * every third of it when no write came, checked before each branch call. Default 10 000.
   */
  leaseTtlMs?: number
  /**
   * XA resources by name (mysql2/promise pools, pg Pools): `x.branch('name', fn)` uses them, and recovery
   * finishes in-doubt branches on them (at start and every `recoverEveryMs`). A coordinator recovering XA
   * transactions must know every database their branches ran on. Default none.
   */
  resources?: Readonly<Record<string, XaPool>>
  /** Every state change, after it was written to the store. Errors thrown here are ignored. */
  onEvent?: (event: TxEvent) => void
}

/** Options after defaults, validated. */
export interface ResolvedOptions {
  readonly retry: RetryPolicy
  readonly timeoutMs: number
  readonly recover: boolean
  readonly recoverEveryMs: number
  readonly leaseTtlMs: number
  readonly onEvent: ((event: TxEvent) => void) | undefined
}

const MAX_MS = 2_147_483_647

function duration(name: string, value: unknown, fallback: number, min = 1): number {
  if (value === undefined) return fallback
  if (typeof value !== 'number' || !Number.isFinite(value)) {
    throw new TypeError(`latchkey-tx: ${name} must be a number of milliseconds, received ${String(value)}`)
  }
  if (value < min || value > MAX_MS) {
    throw new RangeError(`latchkey-tx: ${name} must be between ${min} and ${MAX_MS}, received ${value}`)
  }
  return value
}

/** Validates every option before any I/O. */
export function resolveOptions(options: CoordinatorOptions): ResolvedOptions {
  if (typeof options !== 'object' || options === null) {
    throw new TypeError(`latchkey-tx: createCoordinator needs an options object, received ${String(options)}`)
  }
  const retry = options.retry ?? {}
  if (typeof retry !== 'object' || retry === null) {
    throw new TypeError(`latchkey-tx: retry must be an object { firstMs, maxMs, attempts }, received ${String(retry)}`)
  }
  const firstMs = duration('retry.firstMs', retry.firstMs, 1_000)
  const maxMs = duration('retry.maxMs', retry.maxMs, Math.max(60_000, firstMs))
  if (maxMs < firstMs) throw new RangeError(`latchkey-tx: retry.maxMs (${maxMs}) must be >= retry.firstMs (${firstMs})`)
  const attempts = retry.attempts ?? 12
  if (!Number.isInteger(attempts) || attempts < 1) {
    throw new RangeError(`latchkey-tx: retry.attempts must be an integer >= 1, received ${String(retry.attempts)}`)
  }
  if (options.recover !== undefined && typeof options.recover !== 'boolean') {
    throw new TypeError(`latchkey-tx: recover must be a boolean, received ${String(options.recover)}`)
  }
  if (options.onEvent !== undefined && typeof options.onEvent !== 'function') {
    throw new TypeError(`latchkey-tx: onEvent must be a function, received ${typeof options.onEvent}`)
  }
  const locks = options.locks as Partial<Locks> | undefined
  if (locks !== undefined && (typeof locks?.mutex !== 'function' || typeof locks.backend !== 'object')) {
    throw new TypeError('latchkey-tx: locks must be a latchkey Locks (createLocks({ backend }))')
  }
  if (locks?.backend !== undefined && locks.backend.capabilities.fencing !== 'native') {
    throw new RangeError(
      'latchkey-tx: locks must issue fencing tokens (a backend with capabilities.fencing "native"): ' +
        'the log refuses writes by an overtaken coordinator by comparing them',
    )
  }
  return {
    retry: { firstMs, maxMs, attempts },
    timeoutMs: duration('timeoutMs', options.timeoutMs, 30_000),
    recover: options.recover ?? true,
    recoverEveryMs: duration('recoverEveryMs', options.recoverEveryMs, 1_000),
    leaseTtlMs: duration('leaseTtlMs', options.leaseTtlMs, 10_000, 100),
    onEvent: options.onEvent,
  }
}
