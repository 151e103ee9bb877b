import { createHash } from 'node:crypto'
import { postgresBackend } from 'latchkey/postgres'
import { checkPrefix, DEFAULT_PREFIX } from './schema.js'
import { dollarPlaceholders, type Row, type SqlDriver, type SqlQuery } from './sql-driver.js'
import { SqlTxStore } from './sql-store.js'
import type { TxStore } from './types.js'

/** A `pg` query config: a named statement is prepared once per connection. */
export interface PgQueryConfig {
  readonly name: string
  readonly text: string
  readonly values: unknown[]
}

/** The slice of a `pg` client the store uses. */
export interface PgClientLike {
  query(sql: string | PgQueryConfig, params?: unknown[]): Promise<{ rows: Row[]; rowCount: number | null }>
  release(destroy?: boolean | Error): void
}

/** The slice of a `pg` Pool the store uses. */
export interface PgPoolLike {
  connect(): Promise<PgClientLike>
  query(sql: string | PgQueryConfig, params?: unknown[]): Promise<{ rows: Row[]; rowCount: number | null }>
}

/** Options of {@link postgresStore}. */
export interface PostgresStoreOptions {
  /** A `pg` Pool; never closed by the store unless `ownsPool`. */
  pool: PgPoolLike
  /** Table prefix. Default `latchkey_tx_`. */
  tablePrefix?: string
  /** Whether `close()` ends the pool. Default false. */
  ownsPool?: boolean
}

/**
 * Names for the log's prepared statements: one per distinct text (a hash of it), the `$n` form computed once.
 * The log sends a handful of shapes, so the cache stays small; it is capped all the same.
 */
class PreparedNames {
  private readonly names = new Map<string, { name: string; text: string }>()

  get(sql: string): { name: string; text: string } {
    let entry = this.names.get(sql)
    if (entry === undefined) {
      if (this.names.size >= 500) this.names.clear()
      entry = {
        name: `ltx_${createHash('sha1').update(sql).digest('hex').slice(0, 32)}`,
        text: dollarPlaceholders(sql),
      }
      this.names.set(sql, entry)
    }
    return entry
  }
}

/** pg sends a JS bigint badly: the log's tokens travel as decimal strings. */
const params = (values: readonly unknown[]) => values.map((v) => (typeof v === 'bigint' ? v.toString() : v))

/**
 * The log in PostgreSQL 12+ through a `pg` Pool, with row leases (recovery leases on each transaction's own
 * row); `lockBackend()` is latchkey's PostgreSQL `table` backend on the same pool.
 *
 * @example
 * const pool = new pg.Pool({ connectionString: 'postgres://postgres@127.0.0.1:5432/test' })
 * const tc = createCoordinator({ store: postgresStore({ pool }) })
 */
export function postgresStore(options: PostgresStoreOptions): TxStore {
  if (typeof options?.pool?.connect !== 'function') {
    throw new TypeError('latchkey-tx: postgresStore needs options.pool, a pg Pool (new pg.Pool(...))')
  }
  const prefix = checkPrefix(options.tablePrefix ?? DEFAULT_PREFIX)
  const pool = options.pool
  const prepared = new PreparedNames()
  const run =
    (client: PgPoolLike | PgClientLike): SqlQuery =>
    async (sql, values = [], options) => {
      const r =
        options?.prepare === true
          ? await client.query({ ...prepared.get(sql), values: params(values) })
          : await client.query(dollarPlaceholders(sql), params(values))
      return { rows: r.rows, affected: r.rowCount ?? 0 }
    }
  const driver: SqlDriver = {
    dialect: 'postgres',
    query: run(pool),
    async transaction(fn) {
      const client = await pool.connect()
      let broken: Error | undefined
      try {
        await client.query('BEGIN')
        const result = await fn(run(client))
        await client.query('COMMIT')
        return result
      } catch (error) {
        await client.query('ROLLBACK').catch((e: Error) => {
          broken = e
        })
        throw error
      } finally {
        client.release(broken)
      }
    },
    close: async () => {
      if (options.ownsPool === true) await (pool as unknown as { end(): Promise<void> }).end()
    },
  }
  return new SqlTxStore(driver, prefix, () => postgresBackend({ pool: pool as never }))
}
