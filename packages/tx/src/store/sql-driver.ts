/** The few things the SQL log needs from a database client; one small adapter per driver. */

/** A row as returned by the driver. */
export type Row = Record<string, unknown>

/**
 * Runs one statement written with `?` placeholders. `prepare`: a statement the log sends often, worth a named
 * prepared statement where the driver has them (PostgreSQL: parsed and planned once per connection).
 */
export type SqlQuery = (
  sql: string,
  params?: readonly unknown[],
  options?: { readonly prepare?: boolean },
) => Promise<{ rows: Row[]; affected: number }>

/** A database connection source. */
export interface SqlDriver {
  readonly dialect: 'sqlite' | 'postgres' | 'mysql'
  /** One statement outside any transaction. */
  query: SqlQuery
  /** Runs `fn` in one transaction: committed when it resolves, rolled back when it rejects. */
  transaction<T>(fn: (query: SqlQuery) => Promise<T>): Promise<T>
  /** Closes what the driver opened. */
  close(): Promise<void>
}

/** Rewrites `?` placeholders as `$1, $2, ...` (PostgreSQL); the log's SQL never has `?` inside literals. */
export function dollarPlaceholders(sql: string): string {
  let n = 0
  return sql.replace(/\?/g, () => `$${++n}`)
}

/** Serializes async work: one transaction at a time on a connection that cannot interleave them. */
export class SerialQueue {
  private tail: Promise<unknown> = Promise.resolve()

  run<T>(fn: () => Promise<T>): Promise<T> {
    const next = this.tail.then(fn, fn)
    this.tail = next.catch(() => undefined)
    return next
  }
}

/** One statement with its `?` parameters. */
export interface SqlStatement {
  readonly sql: string
  readonly params: unknown[]
}
