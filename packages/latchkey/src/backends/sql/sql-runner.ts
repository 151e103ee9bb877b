import { connectWithin } from './sql-pin.js'

const noop = (): void => undefined

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

  /** What must hold while a connection is lent out; returns its undoing. By default nothing. */
  protected guard(_connection: C): () => void {
    return noop
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
    const unguard = this.guard(connection)
    try {
      const result = await fn(connection)
      unguard()
      this.giveBack(connection, true)
      return result
    } catch (error) {
      unguard()
      this.giveBack(connection, !this.isFatal(error))
      throw this.mapError(error)
    }
  }
}
