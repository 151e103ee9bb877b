/**
 * Taking a connection from a pool the application handed in, without hanging when the pool is exhausted.
 * Shared by the MySQL and PostgreSQL backends.
 */
import { BackendUnavailableError } from '../../errors.js'

/** Default of `connectTimeoutMs`: how long to wait for a free pool connection. */
export const DEFAULT_CONNECT_TIMEOUT_MS = 5_000

/**
 * Resolves with `connect()`'s connection, or rejects with a `BackendUnavailableError` after `timeoutMs`
 * (the pool is exhausted, typically because session-scoped strategies pin one connection per held lock).
 * A connection that arrives after the timeout is handed straight back with `giveBack`.
 */
export function connectWithin<C>(
  connect: () => Promise<C>,
  giveBack: (connection: C) => void,
  timeoutMs: number,
  /** How messages name the backend and its server: `mysql backend at 127.0.0.1:3306`. */
  backendName: string,
): Promise<C> {
  return new Promise<C>((resolve, reject) => {
    let timedOut = false
    const timer = setTimeout(() => {
      timedOut = true
      reject(
        new BackendUnavailableError(
          `${backendName}: no pool connection became free within ${timeoutMs} ms; the pool is exhausted ` +
            '(session strategies pin one connection per held lock): enlarge the pool or release locks',
        ),
      )
    }, timeoutMs)
    timer.unref()
    connect().then(
      (connection) => {
        clearTimeout(timer)
        if (timedOut) giveBack(connection)
        else resolve(connection)
      },
      (error: unknown) => {
        clearTimeout(timer)
        if (!timedOut) reject(error)
      },
    )
  })
}

/** Validates a positive finite timeout option, naming it in the error. */
export function checkTimeout(option: string, value: unknown, fallback: number): number {
  if (value === undefined) return fallback
  if (typeof value !== 'number' || !Number.isFinite(value) || value < 1) {
    throw new RangeError(`latchkey: ${option} must be a finite number of milliseconds >= 1, received ${String(value)}`)
  }
  return value
}
