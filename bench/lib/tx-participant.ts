/**
 * The participant side of the latchkey-tx benchmark: a database of the same kind as the coordinator's log, with a
 * bench table and a barrier table created (and dropped) by the run, and `branch()`, one participant call: its own
 * database transaction doing N business writes, optionally inside the barrier. The no-coordinator baseline calls
 * the very same function without a barrier, so both sides run the same SQL in the same transactions.
 */
import { createRequire } from 'node:module'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { barrier, ensureBarrierTable } from 'latchkey-tx/barrier'
import mysql from 'mysql2/promise'
import pg from 'pg'

/** The three databases the log runs on. */
export type DbKind = 'sqlite' | 'postgres' | 'mariadb'

export const PG_URL = process.env.LATCHKEY_POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/test'
export const MYSQL_URL = process.env.LATCHKEY_MYSQL_URL ?? 'mysql://root@127.0.0.1:3306/test'

/** Which branch call the barrier guards (the fields every branch function receives). */
export interface BranchKey {
  readonly gid: string
  readonly branch: string
  readonly op: string
}

/** One participant database. */
export interface Participant {
  readonly kind: DbKind
  /** One participant call: BEGIN, [barrier insert,] `writes` business writes, COMMIT. */
  branch(writes: number, key: BranchKey | undefined): Promise<void>
  /** Drops the bench tables and closes the connections. */
  close(): Promise<void>
}

const require = createRequire(import.meta.url)

/** One account row per worker: the writes of concurrent workers never wait for each other's row locks. */
const ACCOUNTS = 64

/** Opens the participant database `kind` with tables named after `suffix` (unique per run). */
export async function openParticipant(kind: DbKind, suffix: string, poolSize: number): Promise<Participant> {
  const p = await open(kind, suffix, poolSize)
  // An empty branch without the barrier touches no database at all (DTM's "empty branches").
  return {
    ...p,
    branch: (writes, key) => (writes === 0 && key === undefined ? Promise.resolve() : p.branch(writes, key)),
  }
}

/** A pooled connection that runs SQL text (a pg PoolClient, a mysql2/promise PoolConnection). */
interface PooledConnection {
  query(sql: string): Promise<unknown>
  release(): void
}

/** BEGIN, `body`, COMMIT (ROLLBACK when it throws); the connection goes back to its pool either way. */
async function inTransaction<C extends PooledConnection>(c: C, body: (c: C) => Promise<unknown>): Promise<void> {
  try {
    await c.query('BEGIN')
    await body(c)
    await c.query('COMMIT')
  } catch (error) {
    await c.query('ROLLBACK').catch(() => undefined)
    throw error
  } finally {
    c.release()
  }
}

async function open(kind: DbKind, suffix: string, poolSize: number): Promise<Participant> {
  const acct = `bench_tx_acct_${suffix}`
  const journal = `bench_tx_journal_${suffix}`
  const barrierTable = `bench_tx_barrier_${suffix}`
  let next = 0
  // Two business writes, as in a transfer: move the balance, journal the movement.
  const writeSql = (i: number) => (i % 2 === 0 ? 'update' : 'insert')
  const pick = () => (next++ % ACCOUNTS) + 1

  if (kind === 'postgres') {
    const pool = new pg.Pool({ connectionString: PG_URL, max: poolSize })
    await pool.query(`CREATE TABLE ${acct} (id int PRIMARY KEY, bal bigint NOT NULL)`)
    await pool.query(`INSERT INTO ${acct} SELECT g, 0 FROM generate_series(1, ${ACCOUNTS}) g`)
    await pool.query(`CREATE TABLE ${journal} (id bigserial PRIMARY KEY, acct int NOT NULL, amount int NOT NULL)`)
    await ensureBarrierTable(pool, { table: barrierTable })
    const business = async (c: pg.PoolClient, writes: number) => {
      const id = pick()
      for (let i = 0; i < writes; i++) {
        if (writeSql(i) === 'update') await c.query(`UPDATE ${acct} SET bal = bal + 1 WHERE id = $1`, [id])
        else await c.query(`INSERT INTO ${journal} (acct, amount) VALUES ($1, 1)`, [id])
      }
    }
    return {
      kind,
      branch: async (writes, key) =>
        inTransaction(await pool.connect(), (c) =>
          key === undefined
            ? business(c, writes)
            : barrier(c, { ...key, table: barrierTable }, (t) => business(t, writes)),
        ),
      async close() {
        await pool.query(`DROP TABLE IF EXISTS ${acct}, ${journal}, ${barrierTable}`)
        await pool.end()
      },
    }
  }

  if (kind === 'mariadb') {
    const pool = mysql.createPool({ uri: MYSQL_URL, connectionLimit: poolSize })
    await pool.query(`CREATE TABLE ${acct} (id int PRIMARY KEY, bal bigint NOT NULL) ENGINE=InnoDB`)
    await pool.query(
      `INSERT INTO ${acct} VALUES ${Array.from({ length: ACCOUNTS }, (_, i) => `(${i + 1}, 0)`).join(',')}`,
    )
    await pool.query(
      `CREATE TABLE ${journal} (id bigint AUTO_INCREMENT PRIMARY KEY, acct int NOT NULL, amount int NOT NULL) ENGINE=InnoDB`,
    )
    await ensureBarrierTable(pool, { table: barrierTable })
    const business = async (c: mysql.PoolConnection, writes: number) => {
      const id = pick()
      for (let i = 0; i < writes; i++) {
        if (writeSql(i) === 'update') await c.query(`UPDATE ${acct} SET bal = bal + 1 WHERE id = ?`, [id])
        else await c.query(`INSERT INTO ${journal} (acct, amount) VALUES (?, 1)`, [id])
      }
    }
    return {
      kind,
      branch: async (writes, key) =>
        inTransaction(await pool.getConnection(), (c) =>
          key === undefined
            ? business(c, writes)
            : barrier(c, { ...key, table: barrierTable }, (t) => business(t, writes)),
        ),
      async close() {
        await pool.query(`DROP TABLE IF EXISTS ${acct}, ${journal}, ${barrierTable}`)
        await pool.end()
      },
    }
  }

  // SQLite: the participant's own file, with the log's durability settings (WAL, synchronous = FULL).
  const Database = require('better-sqlite3') as typeof import('better-sqlite3')
  const path = join(tmpdir(), `bench-tx-participant-${suffix}.db`)
  const db = new Database(path)
  db.pragma('journal_mode = WAL')
  db.pragma('synchronous = FULL')
  db.pragma('busy_timeout = 5000')
  db.exec(`CREATE TABLE ${acct} (id INTEGER PRIMARY KEY, bal INTEGER NOT NULL)`)
  const seed = db.prepare(`INSERT INTO ${acct} VALUES (?, 0)`)
  for (let i = 1; i <= ACCOUNTS; i++) seed.run(i)
  db.exec(`CREATE TABLE ${journal} (id INTEGER PRIMARY KEY AUTOINCREMENT, acct INTEGER NOT NULL, amount INTEGER)`)
  await ensureBarrierTable(db, { table: barrierTable })
  const update = db.prepare(`UPDATE ${acct} SET bal = bal + 1 WHERE id = ?`)
  const insert = db.prepare(`INSERT INTO ${journal} (acct, amount) VALUES (?, 1)`)
  const business = (writes: number) => {
    const id = pick()
    for (let i = 0; i < writes; i++) (writeSql(i) === 'update' ? update : insert).run(id)
  }
  // One connection, and the barrier awaits between statements: transactions on it must not interleave.
  let tail: Promise<unknown> = Promise.resolve()
  const serial = <T>(fn: () => Promise<T>): Promise<T> => {
    const run = tail.then(fn, fn)
    tail = run.catch(() => undefined)
    return run
  }
  return {
    kind,
    branch: (writes, key) =>
      serial(async () => {
        db.exec('BEGIN IMMEDIATE')
        try {
          if (key === undefined) business(writes)
          else await barrier(db, { ...key, table: barrierTable }, () => business(writes))
          db.exec('COMMIT')
        } catch (error) {
          db.exec('ROLLBACK')
          throw error
        }
      }),
    async close() {
      await serial(async () => db.close())
      const { rm } = await import('node:fs/promises')
      for (const f of ['', '-wal', '-shm']) await rm(path + f, { force: true })
    },
  }
}
