/**
 * A tiny bank on each test database for barrier tests: an account table and a barrier table with a random
 * prefix, business transactions on their own connection, and a TCC participant written the way a service
 * would write it (barrier + business update in one local transaction).
 */
import { join } from 'node:path'
import Database from 'better-sqlite3'
import mysql from 'mysql2/promise'
import pg from 'pg'
import { barrier, ensureBarrierTable } from '../../src/barrier/index.js'
import { type Dialect, MYSQL_URL, POSTGRES_URL, tempDir, uniquePrefix } from './databases.js'

export type Isolation = 'READ COMMITTED' | 'REPEATABLE READ'
type Trx = unknown

export interface Bank {
  readonly dialect: Dialect
  readonly barrierTable: string
  /** Runs `fn` in a new transaction on its own connection: commit when it resolves, rollback when it rejects. */
  inTx<T>(fn: (trx: Trx, connectionId: number) => Promise<T>, isolation?: Isolation): Promise<T>
  /** Adds `delta` to account 1 inside `trx`. */
  add(trx: Trx, delta: number): Promise<void>
  balance(): Promise<number>
  /** One TCC op of the "transfer out of account 1" participant: try takes `amount`, cancel gives it back. */
  call(gid: string, op: 'try' | 'confirm' | 'cancel', amount: number, hold?: Promise<void>): Promise<string>
  /** Raw query outside any transaction (MariaDB: lock-wait inspection). */
  query(sql: string, params?: unknown[]): Promise<Record<string, unknown>[]>
  close(): Promise<void>
}

const DELTA = { try: -1, confirm: 0, cancel: 1 } as const

export async function openBank(dialect: Dialect, initial = 100): Promise<Bank> {
  const prefix = uniquePrefix('lbk')
  const acct = `${prefix}acct`
  const barrierTable = `${prefix}barrier`
  const base = dialect === 'sqlite' ? sqliteBase() : dialect === 'postgres' ? pgBase() : mysqlBase()
  await base.exec(`CREATE TABLE ${acct} (id INTEGER PRIMARY KEY, bal INTEGER NOT NULL)`)
  await base.exec(`INSERT INTO ${acct} (id, bal) VALUES (1, ${initial})`)
  await ensureBarrierTable(base.handle, { table: barrierTable })
  const bank: Bank = {
    dialect,
    barrierTable,
    inTx: base.inTx,
    add: (trx, delta) => base.run(trx, `UPDATE ${acct} SET bal = bal + ${Math.trunc(delta)} WHERE id = 1`),
    balance: async () => Number((await base.query(`SELECT bal FROM ${acct} WHERE id = 1`))[0]?.bal),
    call: (gid, op, amount, hold) =>
      base.inTx(async (trx) => {
        const outcome = await barrier(trx, { gid, branch: 'out', op, table: barrierTable }, (t) =>
          bank.add(t, DELTA[op] * amount),
        )
        await hold
        return outcome.status
      }),
    query: base.query,
    close: async () => {
      await base.exec(`DROP TABLE IF EXISTS ${acct}`)
      await base.exec(`DROP TABLE IF EXISTS ${barrierTable}`)
      await base.close()
    },
  }
  return bank
}

interface Base {
  handle: unknown
  exec(sql: string): Promise<void>
  query(sql: string, params?: unknown[]): Promise<Record<string, unknown>[]>
  run(trx: Trx, sql: string): Promise<void>
  inTx<T>(fn: (trx: Trx, connectionId: number) => Promise<T>, isolation?: Isolation): Promise<T>
  close(): Promise<void>
}

function sqliteBase(): Base {
  const tmp = tempDir()
  const db = new Database(join(tmp.dir, 'bank.db'))
  db.pragma('journal_mode = WAL')
  return {
    handle: db,
    exec: async (sql) => void db.exec(sql),
    query: async (sql, params = []) => db.prepare(sql).all(...params) as Record<string, unknown>[],
    run: async (trx, sql) => void (trx as typeof db).prepare(sql).run(),
    // One connection: SQLite serialises writers anyway; transactions here never overlap.
    inTx: async (fn) => {
      db.exec('BEGIN IMMEDIATE')
      try {
        const result = await fn(db, 0)
        db.exec('COMMIT')
        return result
      } catch (error) {
        db.exec('ROLLBACK')
        throw error
      }
    },
    close: async () => {
      db.close()
      tmp.remove()
    },
  }
}

function pgBase(): Base {
  const pool = new pg.Pool({ connectionString: POSTGRES_URL, max: 6 })
  pool.on('error', () => undefined)
  return {
    handle: pool,
    exec: async (sql) => void (await pool.query(sql)),
    query: async (sql, params = []) => (await pool.query(sql, params)).rows,
    run: async (trx, sql) => void (await (trx as pg.PoolClient).query(sql)),
    inTx: async (fn, isolation = 'READ COMMITTED') => {
      const client = await pool.connect()
      try {
        await client.query(`BEGIN ISOLATION LEVEL ${isolation}`)
        const pid = Number((await client.query('SELECT pg_backend_pid() AS pid')).rows[0].pid)
        const result = await fn(client, pid)
        await client.query('COMMIT')
        return result
      } catch (error) {
        await client.query('ROLLBACK')
        throw error
      } finally {
        client.release()
      }
    },
    close: () => pool.end(),
  }
}

function mysqlBase(): Base {
  const pool = mysql.createPool({ uri: MYSQL_URL, connectionLimit: 6 })
  return {
    handle: pool,
    exec: async (sql) => void (await pool.query(sql)),
    query: async (sql, params = []) => (await pool.query(sql, params))[0] as Record<string, unknown>[],
    run: async (trx, sql) => void (await (trx as mysql.PoolConnection).query(sql)),
    inTx: async (fn, isolation = 'REPEATABLE READ') => {
      const conn = await pool.getConnection()
      try {
        await conn.query('SET SESSION innodb_lock_wait_timeout = 20')
        await conn.query(`SET TRANSACTION ISOLATION LEVEL ${isolation}`)
        await conn.query('BEGIN')
        const [rows] = await conn.query('SELECT CONNECTION_ID() AS id')
        const result = await fn(conn, Number((rows as { id: number }[])[0]?.id))
        await conn.query('COMMIT')
        return result
      } catch (error) {
        await conn.query('ROLLBACK')
        throw error
      } finally {
        conn.release()
      }
    },
    close: () => pool.end(),
  }
}
