import { createRequire } from 'node:module'
import type { Backend } from 'latchkey'
import { redactUrl } from 'latchkey'
import { mysqlBackend } from 'latchkey/mysql'
import { postgresBackend } from 'latchkey/postgres'
import { sqliteBackend } from 'latchkey/sqlite'
import { TxError } from '../errors.js'
import { checkPrefix } from '../store/schema.js'
import { dollarPlaceholders, type Row } from '../store/sql-driver.js'
import type { OutboxDialect } from './schema.js'

const require = createRequire(import.meta.url)

/** The outbox's own connection to the database its rows live in (the relay's reads and marks, schema). */
export interface StoreDb {
  readonly dialect: OutboxDialect
  readonly prefix: string
  /** The URL with any password hidden, for messages. */
  readonly shownUrl: string
  /** One statement (`?` placeholders) in autocommit. */
  query(sql: string, params?: readonly unknown[]): Promise<{ rows: Row[]; affected: number }>
  /** Runs the CREATE statements once per StoreDb (they are idempotent, so a race with another process is fine). */
  ensure(statements: readonly string[]): Promise<void>
  /** A latchkey backend on the same database, for the relay's partition leases. */
  lockBackend(): Backend
  close(): Promise<void>
}

/** `store` option shared by createOutbox and createInbox. */
export interface StoreOptions {
  /** `postgres://…`, `mysql://…` (or `mariadb://`) or `sqlite:<path>`. `?tablePrefix=x_` picks the tables. */
  store: string
  /** Table prefix; overrides the URL's. Default `latchkey_tx_` (tables `latchkey_tx_outbox`, `latchkey_tx_inbox`). */
  tablePrefix?: string
}

function peer<T>(name: string, what: string): T {
  try {
    return require(name) as T
  } catch (error) {
    throw new TxError(`latchkey-tx: a ${what} outbox/inbox needs ${name}: npm install ${name}`, {
      code: 'MISSING_PEER',
      cause: error,
    })
  }
}

/** Parses and checks the store options (no I/O) and opens the pool or file lazily on first use. */
export function openStoreDb(options: StoreOptions, who: string): StoreDb {
  if (typeof options !== 'object' || options === null) {
    throw new TypeError(`latchkey-tx: ${who} needs an options object, received ${String(options)}`)
  }
  const url = options.store
  if (typeof url !== 'string' || url.length === 0) {
    throw new TypeError(`latchkey-tx: ${who} options.store must be a database URL string, received ${String(url)}`)
  }
  const shownUrl = redactUrl(url)
  let dialect: OutboxDialect
  let target: string
  let urlPrefix: string | null = null
  if (url.startsWith('sqlite:')) {
    const [path = '', query = ''] = url.slice('sqlite:'.length).split('?')
    if (path.length === 0) throw new TypeError(`latchkey-tx: ${who} options.store ${shownUrl} names no file`)
    dialect = 'sqlite'
    target = path
    urlPrefix = new URLSearchParams(query).get('tablePrefix')
  } else {
    let parsed: URL
    try {
      parsed = new URL(url)
    } catch {
      throw new TypeError(`latchkey-tx: ${who} options.store ${shownUrl} cannot be parsed`)
    }
    urlPrefix = parsed.searchParams.get('tablePrefix')
    parsed.searchParams.delete('tablePrefix')
    if (parsed.protocol === 'postgres:' || parsed.protocol === 'postgresql:') dialect = 'postgres'
    else if (parsed.protocol === 'mysql:' || parsed.protocol === 'mariadb:') {
      dialect = 'mysql'
      parsed.protocol = 'mysql:'
    } else {
      throw new RangeError(
        `latchkey-tx: ${who} options.store must start with sqlite:, postgres:// or mysql://, received ${shownUrl}`,
      )
    }
    target = parsed.toString()
  }
  const prefix = checkPrefix(options.tablePrefix ?? urlPrefix ?? 'latchkey_tx_')
  return new LazyStoreDb(dialect, prefix, shownUrl, target)
}

interface Opened {
  query(sql: string, params: readonly unknown[]): Promise<{ rows: Row[]; affected: number }>
  backend(): Backend
  close(): Promise<void>
}

class LazyStoreDb implements StoreDb {
  private opened: Opened | undefined
  private readonly ensured = new Map<string, Promise<void>>()
  private readonly backends: Backend[] = []

  constructor(
    readonly dialect: OutboxDialect,
    readonly prefix: string,
    readonly shownUrl: string,
    private readonly target: string,
  ) {}

  private open(): Opened {
    this.opened ??= openDriver(this.dialect, this.target)
    return this.opened
  }

  query(sql: string, params: readonly unknown[] = []) {
    return this.open().query(sql, params)
  }

  ensure(statements: readonly string[]): Promise<void> {
    const key = statements.join(';')
    let done = this.ensured.get(key)
    if (done === undefined) {
      done = (async () => {
        for (const sql of statements) {
          // Two processes creating the same table at once: PostgreSQL may fail the loser on its catalog's
          // unique index even with IF NOT EXISTS. Once the winner committed, running it again is a no-op.
          await this.query(sql).catch(() => this.query(sql))
        }
      })()
      // A failed attempt (database down) is tried again by the next caller rather than cached.
      done.catch(() => this.ensured.delete(key))
      this.ensured.set(key, done)
    }
    return done
  }

  lockBackend(): Backend {
    const backend = this.open().backend()
    this.backends.push(backend)
    return backend
  }

  async close(): Promise<void> {
    const opened = this.opened
    this.opened = undefined
    this.ensured.clear()
    // Backends first: they may hold a connection of the pool closed next.
    for (const backend of this.backends.splice(0)) await backend.close()
    await opened?.close()
  }
}

function openDriver(dialect: OutboxDialect, target: string): Opened {
  if (dialect === 'postgres') {
    type Pool = { query(s: string, p: unknown[]): Promise<{ rows: Row[]; rowCount: number | null }> }
    const pg = peer<{ Pool: new (o: object) => Pool & { on(e: string, f: () => void): void; end(): Promise<void> } }>(
      'pg',
      'PostgreSQL',
    )
    const pool = new pg.Pool({ connectionString: target, max: 6 })
    pool.on('error', () => undefined) // an idle client killed by the server: the pool replaces it
    return {
      query: async (sql, params) => {
        const values = params.map((v) => (typeof v === 'bigint' ? v.toString() : v))
        const r = await pool.query(dollarPlaceholders(sql), values)
        return { rows: r.rows, affected: r.rowCount ?? 0 }
      },
      backend: () => postgresBackend({ pool: pool as never }),
      close: () => pool.end(),
    }
  }
  if (dialect === 'mysql') {
    type Pool = { query(s: string, p: unknown[]): Promise<[unknown, unknown]>; end(): Promise<void> }
    const mysql = peer<{ createPool(o: object): Pool }>('mysql2/promise', 'MySQL')
    const pool = mysql.createPool({ uri: target, connectionLimit: 6 })
    return {
      query: async (sql, params) => {
        const [result] = await pool.query(sql, params as unknown[])
        if (Array.isArray(result)) return { rows: result as Row[], affected: 0 }
        return { rows: [], affected: (result as { affectedRows?: number }).affectedRows ?? 0 }
      },
      backend: () => mysqlBackend({ pool: pool as never }),
      close: () => pool.end(),
    }
  }
  type Db = {
    pragma(s: string): unknown
    prepare(s: string): { reader: boolean; all(...p: unknown[]): unknown[]; run(...p: unknown[]): { changes: number } }
    close(): void
  }
  const Database = peer<new (path: string) => Db>('better-sqlite3', 'SQLite')
  const db = new Database(target)
  db.pragma('journal_mode = WAL')
  db.pragma('busy_timeout = 5000')
  return {
    // better-sqlite3 is synchronous; the relay never holds a transaction open across an await.
    query: async (sql, params) => {
      const statement = db.prepare(sql)
      if (statement.reader) return { rows: statement.all(...params) as Row[], affected: 0 }
      return { rows: [], affected: statement.run(...params).changes }
    },
    backend: () => sqliteBackend({ path: target }),
    close: async () => {
      db.close()
    },
  }
}
