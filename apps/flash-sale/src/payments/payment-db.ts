/**
 * The payment service's own database: accounts with balances and one charge row per paid order. SQLite file by
 * default (no server), or PostgreSQL / MariaDB by URL; tables are named `<prefix>accounts`, `<prefix>charges`
 * (and the barrier `<prefix>barrier`), so several runs can share a server.
 */
import Database from 'better-sqlite3'
import { checkSeedOptions, type SeedOptions, seededBalance } from './accounts.js'
import { type Dialect, dialectOf, type Sql, sqlOn } from './sql-handle.js'

/** An open payment database. */
export interface PaymentDb {
  readonly dialect: Dialect
  /** What `latchkey-tx/fastify` runs local transactions on: better-sqlite3 Database, pg Pool or mysql2 pool. */
  readonly handle: unknown
  /** Autocommit statements on the pool. */
  readonly sql: Sql
  readonly prefix: string
  close(): Promise<void>
}

/** A charge as the audit reads it. */
export interface ChargeRow {
  readonly order_id: string
  readonly sale_id: string
  readonly user_id: string
  readonly amount: number
  /** `charged`, or `refunded` once compensated. */
  readonly status: string
}

/** What the payment invariants need from the payment side. */
export interface PaymentAudit {
  readonly accounts: number
  /** Sum of seeded balances. */
  readonly initialTotal: number
  /** Sum of balances now. */
  readonly balanceTotal: number
  /** Accounts whose balance is not its seed minus its own charges (must be 0). */
  readonly accountsOff: number
  readonly charges: readonly ChargeRow[]
}

const PREFIX = /^[a-z][a-z0-9_]{0,30}$/

/** Opens the payment database at `url` (creating its tables). */
export async function openPaymentDb(url: string, prefix = 'fs_pay_'): Promise<PaymentDb> {
  if (!PREFIX.test(prefix)) throw new RangeError(`payments: table prefix must match ${PREFIX}, received ${prefix}`)
  const dialect = dialectOf(url)
  let db: PaymentDb
  if (dialect === 'sqlite') {
    const file = url.slice('sqlite:'.length).replace(/^\/\//, '')
    const sqlite = new Database(file)
    sqlite.pragma('busy_timeout = 10000')
    sqlite.pragma('journal_mode = WAL')
    // WAL + NORMAL: a commit survives a killed process (kill -9), not a power cut; FULL's fsync per commit
    // made each charge wait on the disk, and the service runs its charges one at a time.
    sqlite.pragma('synchronous = NORMAL')
    db = { dialect, handle: sqlite, sql: sqlOn(dialect, sqlite), prefix, close: async () => void sqlite.close() }
  } else if (dialect === 'postgres') {
    const { default: pg } = await import('pg')
    const pool = new pg.Pool({ connectionString: url, max: 8 })
    db = { dialect, handle: pool, sql: sqlOn(dialect, pool), prefix, close: () => pool.end() }
  } else {
    const mysql = await import('mysql2/promise')
    const pool = mysql.createPool({ uri: url.replace(/^mariadb:/i, 'mysql:'), connectionLimit: 8 })
    db = { dialect, handle: pool, sql: sqlOn(dialect, pool), prefix, close: () => pool.end() }
  }
  try {
    await db.sql.run(
      `CREATE TABLE IF NOT EXISTS ${prefix}accounts (user_id VARCHAR(64) PRIMARY KEY,
        initial BIGINT NOT NULL, balance BIGINT NOT NULL)`,
    )
    await db.sql.run(
      `CREATE TABLE IF NOT EXISTS ${prefix}charges (order_id VARCHAR(64) PRIMARY KEY, sale_id VARCHAR(64) NOT NULL,
        user_id VARCHAR(64) NOT NULL, amount BIGINT NOT NULL, status VARCHAR(16) NOT NULL, gid VARCHAR(160) NOT NULL)`,
    )
  } catch (error) {
    await db.close()
    throw error
  }
  return db
}

/**
 * Creates the seeded accounts `u0..u<n-1>` that do not exist yet (existing ones keep their balance), in batches
 * of 500 rows per statement.
 */
export async function seedAccounts(db: PaymentDb, options: SeedOptions): Promise<void> {
  checkSeedOptions(options)
  const ignore =
    db.dialect === 'mysql' ? 'INSERT IGNORE INTO' : db.dialect === 'sqlite' ? 'INSERT OR IGNORE INTO' : 'INSERT INTO'
  const tail = db.dialect === 'postgres' ? ' ON CONFLICT (user_id) DO NOTHING' : ''
  for (let from = 0; from < options.accounts; from += 500) {
    const to = Math.min(options.accounts, from + 500)
    const params: unknown[] = []
    for (let i = from; i < to; i++) {
      const balance = seededBalance(i, options)
      params.push(`u${i}`, balance, balance)
    }
    const rows = Array.from({ length: to - from }, () => '(?, ?, ?)').join(', ')
    await db.sql.run(`${ignore} ${db.prefix}accounts (user_id, initial, balance) VALUES ${rows}${tail}`, params)
  }
}

/** The payment side of the invariants, read from `db`. */
export async function paymentAudit(db: PaymentDb): Promise<PaymentAudit> {
  const p = db.prefix
  const [totals] = await db.sql.all<{ n: number | string; initial: number | string; balance: number | string }>(
    `SELECT COUNT(*) AS n, COALESCE(SUM(initial), 0) AS initial, COALESCE(SUM(balance), 0) AS balance FROM ${p}accounts`,
  )
  const [off] = await db.sql.all<{ n: number | string }>(
    `SELECT COUNT(*) AS n FROM ${p}accounts a WHERE a.initial - a.balance <>
      (SELECT COALESCE(SUM(c.amount), 0) FROM ${p}charges c WHERE c.user_id = a.user_id AND c.status = 'charged')`,
  )
  const charges = await db.sql.all<ChargeRow>(`SELECT order_id, sale_id, user_id, amount, status FROM ${p}charges`)
  return {
    accounts: Number(totals?.n ?? 0),
    initialTotal: Number(totals?.initial ?? 0),
    balanceTotal: Number(totals?.balance ?? 0),
    accountsOff: Number(off?.n ?? 0),
    charges: charges.map((c) => ({ ...c, amount: Number(c.amount) })),
  }
}

/** Drops the tables of `db.prefix` (a run on a shared server cleaning up after itself). */
export async function dropPaymentTables(db: PaymentDb): Promise<void> {
  for (const table of ['accounts', 'charges', 'barrier']) await db.sql.run(`DROP TABLE IF EXISTS ${db.prefix}${table}`)
}
