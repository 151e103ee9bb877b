import { connectWithin } from './sql-pin.js'

/**
 * One connection at a time from the application's pool, as both SQL backends take them: a bounded wait for a
 * free connection, driver errors mapped (naming the server, the password hidden), and a connection that failed
 * fatally destroyed rather than returned, so that the next borrower does not get a dead one.
 */
export abstract class PoolRunner<C> {
  /**
   * `backendName` is how messages name the backend and its server: `mysql backend at 127.0.0.1:3306`;
   * `secrets` are hidden from messages built from driver errors.
   */
  constructor(
    readonly connectTimeoutMs: number,
    readonly backendName: string,
    readonly secrets: readonly string[],
  ) {}

  /** Takes a connection from the pool (the wait is bounded by {@link connect}). */
  protected abstract take(): Promise<C>
  /** Returns `connection` to the pool, or destroys it when it is not `healthy` (dead, or may still hold a lock). */
  abstract giveBack(connection: C, healthy: boolean): void
  /** Whether a driver error means the connection it happened on is unusable. */
  abstract isFatal(error: unknown): boolean
  /** A connection or availability failure as `BackendUnavailableError` naming the server; others unchanged. */
  abstract mapError(error: unknown): unknown

  /**
   * Whether `connection`'s link to the server has failed since it was taken (the server ended the session, the
   * socket dropped). Drivers that report this on an event say so here; by default, never known.
   */
  hasFailed(_connection: C): boolean {
    return false
  }

  /** A connection from the pool within `connectTimeoutMs`. */
  connect(): Promise<C> {
    return connectWithin(
      () => this.take(),
      (c) => this.giveBack(c, true),
      this.connectTimeoutMs,
      this.backendName,
    ).catch((error: unknown) => {
      throw this.mapError(error)
    })
  }

  /** Runs `fn` on a pool connection, then gives it back (destroyed if it failed fatally); errors mapped. */
  async with<T>(fn: (c: C) => Promise<T>): Promise<T> {
    const connection = await this.connect()
    try {
      const result = await fn(connection)
      this.giveBack(connection, true)
      return result
    } catch (error) {
      this.giveBack(connection, !this.isFatal(error))
      throw this.mapError(error)
    }
  }
}
