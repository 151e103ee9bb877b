import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { setTimeout as delay } from 'node:timers/promises'
import Database from 'better-sqlite3'
import type { Outbox } from 'latchkey-tx/outbox'
import mysql from 'mysql2/promise'
import pg from 'pg'

/** The business databases the outbox bench runs on. */
export type Dialect = 'postgres' | 'mysql' | 'sqlite'

/** What `addMany` adds for row `i`: its topic, key and payload. */
export type OutboxRow = (i: number) => { topic: string; key: string; payload: unknown }

/** A business database of one dialect: its outbox store URL and a way to commit rows `from`..`from + n - 1`. */
export interface OutboxDb {
  readonly store: string
  /** Adds the rows in transactions of `perTx` rows each. */
  addMany(outbox: Outbox, from: number, n: number, perTx: number): Promise<void>
  /** Drops the outbox tables (a server) or removes the database file (SQLite). */
  close(): Promise<void>
}

/** Where the server databases are. */
export interface ServerUrls {
  readonly postgres: string
  readonly mysql: string
}

/**
 * Opens a business database whose outbox tables are named with `prefix` (dropped by close): PostgreSQL or
 * MariaDB through a pool of two connections, or a fresh SQLite file in WAL mode in a temporary directory.
 */
export function openOutboxDb(dialect: Dialect, prefix: string, urls: ServerUrls, row: OutboxRow): OutboxDb {
  if (dialect === 'postgres') return postgresDb(urls.postgres, prefix, row)
  if (dialect === 'mysql') return mysqlDb(urls.mysql, prefix, row)
  return sqliteDb(prefix, row)
}

/** The first row of each transaction when rows `from`..`from + n - 1` are added `perTx` at a time. */
function* txStarts(from: number, n: number, perTx: number): Generator<number> {
  for (let i = from; i < from + n; i += perTx) yield i
}

function postgresDb(url: string, prefix: string, row: OutboxRow): OutboxDb {
  const pool = new pg.Pool({ connectionString: url, max: 2 })
  return {
    store: `${url}?tablePrefix=${prefix}`,
    async addMany(outbox, from, n, perTx) {
      const c = await pool.connect()
      try {
        for (const i of txStarts(from, n, perTx)) {
          await c.query('BEGIN')
          for (let j = i; j < Math.min(from + n, i + perTx); j++) await outbox.add(c, row(j))
          await c.query('COMMIT')
        }
      } finally {
        c.release()
      }
    },
    async close() {
      await pool.query(`DROP TABLE IF EXISTS ${prefix}outbox, ${prefix}outbox_relays`)
      await pool.end()
    },
  }
}

function mysqlDb(url: string, prefix: string, row: OutboxRow): OutboxDb {
  const pool = mysql.createPool({ uri: url, connectionLimit: 2 })
  return {
    store: `${url}?tablePrefix=${prefix}`,
    async addMany(outbox, from, n, perTx) {
      const c = await pool.getConnection()
      try {
        for (const i of txStarts(from, n, perTx)) {
          await c.beginTransaction()
          for (let j = i; j < Math.min(from + n, i + perTx); j++) await outbox.add(c, row(j))
          await c.commit()
        }
      } finally {
        c.release()
      }
    },
    async close() {
      await pool.query(`DROP TABLE IF EXISTS ${prefix}outbox, ${prefix}outbox_relays`)
      await pool.end()
    },
  }
}

function sqliteDb(prefix: string, row: OutboxRow): OutboxDb {
  const dir = mkdtempSync(join(tmpdir(), 'latchkey-outbox-bench-'))
  const path = join(dir, 'shop.db')
  const db = new Database(path)
  db.pragma('journal_mode = WAL')
  db.pragma('busy_timeout = 5000')
  return {
    store: `sqlite:${path}?tablePrefix=${prefix}`,
    async addMany(outbox, from, n, perTx) {
      for (const i of txStarts(from, n, perTx)) {
        // better-sqlite3 runs the adds synchronously inside the transaction; yield to the relay between them.
        db.transaction(() => {
          for (let j = i; j < Math.min(from + n, i + perTx); j++) void outbox.add(db, row(j))
        })()
        await delay(0)
      }
    },
    async close() {
      db.close()
      rmSync(dir, { recursive: true, force: true })
    },
  }
}
