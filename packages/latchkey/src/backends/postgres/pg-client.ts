/**
 * The slice of `pg` the PostgreSQL backend uses, and its error mapping. `pg` itself is never imported
 * here: the application hands in its pool.
 */
import { BackendUnavailableError } from '../../errors.js'
import { redactText } from '../../redact-url.js'
import { PoolRunner } from '../sql/sql-runner.js'

/** A query result. */
export interface PgResult<R = Record<string, unknown>> {
  readonly rows: R[]
  readonly rowCount: number | null
}

/** A `pg` pool client (`await pool.connect()`). */
export interface PgClient {
  query<R = Record<string, unknown>>(text: string, values?: unknown[]): Promise<PgResult<R>>
  /** `release(true)` (or an error) destroys the client instead of returning it to the pool. */
  release(destroy?: boolean | Error): void
  on(event: 'error' | 'end' | 'notification', listener: (...args: unknown[]) => void): unknown
  removeListener(event: 'error' | 'end' | 'notification', listener: (...args: unknown[]) => void): unknown
  readonly processID?: number | null
}

/** A `pg` pool (`new pg.Pool(...)`). */
export interface PgPool {
  connect(): Promise<PgClient>
}

/** The database clock in epoch milliseconds (`clock_timestamp()`: real time, not the transaction start). */
export const NOW_MS = '(floor(extract(epoch FROM clock_timestamp()) * 1000))::bigint'

/** SQLSTATEs meaning "the connection or server is gone / busy; try again". */
const TRANSIENT = /^(08|57P0|53300|40001|40P01|55P03)/

/** Whether an error means the client it happened on is unusable (no SQLSTATE, or a connection class). */
export function isFatal(error: unknown): boolean {
  const code = (error as { code?: unknown })?.code
  return typeof code !== 'string' || !/^[0-9A-Z]{5}$/.test(code) || /^(08|57P0)/.test(code)
}

/** SQLSTATEs meaning "this pool cannot log in or use its database": the URL or the grants need a fix. */
const LOGIN = /^(28000|28P01|3D000)$/

/**
 * Maps connection / availability failures to `BackendUnavailableError` naming the server (`label`, e.g.
 * `postgres backend at 127.0.0.1:5432`); SQL errors pass through. `secrets` are hidden from the message.
 */
export function mapError(error: unknown, label: string, secrets: readonly string[] = []): unknown {
  if (error instanceof BackendUnavailableError || !(error instanceof Error)) return error
  const code = (error as { code?: unknown }).code
  const message = redactText(error.message, secrets)
  if (typeof code === 'string' && LOGIN.test(code)) {
    return new BackendUnavailableError(`${label}: ${message}; check the user, password and database`, {
      cause: error,
    })
  }
  const sqlState = typeof code === 'string' && /^[0-9A-Z]{5}$/.test(code)
  const transient = sqlState
    ? TRANSIENT.test(code)
    : (typeof code === 'string' && /^E[A-Z]+$/.test(code)) ||
      /terminated|not queryable|timeout|ended|closed|ECONN|socket/i.test(error.message)
  if (!transient) return error
  return new BackendUnavailableError(`${label}: ${message}; try again`, { cause: error })
}

/** `host:port` of a pg pool, from its options or connection string; `undefined` when it does not say. */
export function pgServer(pool: unknown): string | undefined {
  const o = (pool as { options?: { host?: unknown; port?: unknown; connectionString?: unknown } })?.options
  if (o === undefined) return undefined
  if (typeof o.connectionString === 'string') {
    try {
      const u = new URL(o.connectionString)
      return `${u.hostname || 'localhost'}:${u.port || 5432}`
    } catch {
      return undefined
    }
  }
  return `${typeof o.host === 'string' ? o.host : 'localhost'}:${typeof o.port === 'number' ? o.port : 5432}`
}

/** The pool's password, hidden from messages built from driver errors. */
export function pgSecrets(pool: unknown): string[] {
  const o = (pool as { options?: { password?: unknown; connectionString?: unknown } })?.options
  if (typeof o?.password === 'string' && o.password.length > 0) return [o.password]
  if (typeof o?.connectionString === 'string') {
    try {
      const password = decodeURIComponent(new URL(o.connectionString).password)
      return password.length > 0 ? [password] : []
    } catch {
      return []
    }
  }
  return []
}

/** `pool.connect(callback)`: pg-pool hands the client to the callback synchronously, a promise only a tick later. */
type ConnectWithCallback = (callback: (error: Error | undefined, client?: PgClient) => void) => unknown

/**
 * The {@link PoolRunner} of a pg pool.
 *
 * pg emits 'error' on a client whose connection dies (the server ended the session, the server was killed), and
 * an 'error' nobody listens to crashes the process. pg-pool listens while a client is idle, and stops when it lends
 * the client out. So every client is guarded from the moment the pool lends it until it is given back, with
 * nothing in between: taken through `connect(callback)`, which pg-pool calls in the same turn as it lends the client.
 * A promise would resolve only a turn later, and pg parses a whole received chunk in one turn: the
 * ReadyForQuery that completes a connection (or a query) and a FATAL right behind it (a terminated backend) can
 * arrive together, and the FATAL's 'error' would find no listener.
 */
export class PgRunner extends PoolRunner<PgClient> {
  /** The guard of each client lent out: its removal. */
  private readonly guards = new WeakMap<PgClient, () => void>()
  /** Clients lent out whose connection reported an error. */
  private readonly failed = new WeakSet<PgClient>()

  /** `backendName` is how messages name the backend and its server: `postgres backend at 127.0.0.1:5432`. */
  constructor(
    readonly pool: PgPool,
    connectTimeoutMs: number,
    backendName: string,
  ) {
    super(connectTimeoutMs, backendName, pgSecrets(pool))
  }

  protected take(): Promise<PgClient> {
    return new Promise<PgClient>((resolve, reject) => {
      let settled = false
      const lent = (client: PgClient): void => {
        if (settled) return
        settled = true
        this.guard(client)
        resolve(client)
      }
      const failed = (error: unknown): void => {
        if (settled) return
        settled = true
        reject(error)
      }
      const returned = (this.pool.connect as unknown as ConnectWithCallback).call(this.pool, (error, client) => {
        if (error !== undefined && error !== null) failed(error)
        else if (client !== undefined) lent(client)
      })
      // A pool that ignores the callback (not pg-pool) answers with its promise; its client is guarded on arrival.
      if (typeof (returned as PromiseLike<PgClient> | undefined)?.then === 'function') {
        ;(returned as PromiseLike<PgClient>).then(lent, failed)
      }
    })
  }

  giveBack(client: PgClient, healthy: boolean): void {
    // Unguarded first: releasing may lend the client straight to a waiting connect, whose guard must stay.
    this.guards.get(client)?.()
    this.guards.delete(client)
    const broken = this.failed.has(client)
    this.failed.delete(client)
    client.release(healthy && !broken ? undefined : true)
  }

  override hasFailed(client: PgClient): boolean {
    return this.failed.has(client)
  }

  isFatal(error: unknown): boolean {
    return isFatal(error)
  }

  mapError(error: unknown): unknown {
    return mapError(error, this.backendName, this.secrets)
  }

  private guard(client: PgClient): void {
    const onError = (): void => void this.failed.add(client)
    client.on('error', onError)
    this.guards.set(client, () => client.removeListener('error', onError))
  }

  async query<R = Record<string, unknown>>(text: string, values: unknown[] = []): Promise<PgResult<R>> {
    return this.with((c) => c.query<R>(text, values))
  }
}
