import { createHash } from 'node:crypto'
import { SqlTableBackend } from '../sql/sql-table-backend.js'
import type { SqlPool, SqlSession, TableDialect, TableNotifier } from '../sql/table-dialect.js'
import { isFatal, type PgClient, type PgRunner } from './pg-client.js'
import { PG_INSPECT_SQL } from './pg-inspect-sql.js'
import { PgListener } from './pg-listener.js'
import {
  PG_SQL,
  POSTGRES_ADD_PERMITS,
  POSTGRES_HAS_PERMITS,
  POSTGRES_MIGRATION_STATEMENTS,
  RELEASE_CHANNEL,
} from './pg-schema.js'

/** The NOTIFY payload of a lock key: fixed length (payloads are capped at 8 000 bytes), no NUL byte. */
export function channelPayload(key: string): string {
  return createHash('sha1').update(key, 'utf8').digest('hex')
}

/** Lock keys are stored as their UTF-8 bytes (BYTEA: a key may hold a NUL byte, which TEXT refuses). */
export function keyBytes(key: string): Buffer {
  return Buffer.from(key, 'utf8')
}

/**
 * The `'table'` strategy on PostgreSQL 12+: {@link SqlTableBackend} over {@link pgTableDialect}, with releases
 * announced by `NOTIFY` and heard by one `LISTEN`ing client per backend.
 *
 * PostgreSQL takes no gap or next-key locks at all (only SERIALIZABLE adds predicate locks, which never
 * block), so InnoDB's insert-into-the-same-gap deadlock cannot happen here; the fixed lock order (lock row,
 * holders, waiters) rules out the ordinary row-lock cycle too. Transactions run READ COMMITTED explicitly,
 * whatever the database default, so a row locked after a wait is re-read at its latest version.
 */
export class PgTableBackend extends SqlTableBackend {
  constructor(db: PgRunner) {
    super(pgTableDialect(db))
  }
}

/** PostgreSQL's part of the `'table'` strategy. */
export function pgTableDialect(db: PgRunner): TableDialect {
  return {
    name: 'postgres',
    notifications: 'global',
    pool: {
      with: (fn) => db.with((c) => fn(session(c))),
      run: (sql, values) => db.with((c) => session(c).run(sql, values)),
    } satisfies SqlPool,
    sql: PG_SQL,
    inspect: PG_INSPECT_SQL,
    notifier: listeningNotifier(db),
    encodeKey: keyBytes,
    begin: ['BEGIN ISOLATION LEVEL READ COMMITTED'],
    isFatal,
    // ON CONFLICT DO NOTHING waits for a concurrent first insert, then keeps no lock: safe inside.
    ensureKeyInTransaction: true,
    // CREATE TABLE IF NOT EXISTS can still fail on a race in PostgreSQL: concurrent creators queue on one advisory lock.
    migrate: (transaction) =>
      transaction(async (s) => {
        await s.run("SELECT pg_advisory_xact_lock(hashtextextended('latchkey:migration', 0))", [])
        for (const statement of POSTGRES_MIGRATION_STATEMENTS) await s.run(statement, [])
        const { rows } = await s.run<{ n: number }>(POSTGRES_HAS_PERMITS, [])
        if ((rows[0]?.n ?? 0) === 0) await s.run(POSTGRES_ADD_PERMITS, [])
      }),
  }
}

/** A pg client as a {@link SqlSession}: `rowCount` is what an UPDATE / DELETE matched or a SELECT returned. */
function session(c: PgClient): SqlSession {
  return {
    async run<R>(sql: string, values: readonly unknown[]) {
      const result = await c.query<R>(sql, [...values])
      return { rows: result.rows, count: result.rowCount ?? 0 }
    },
  }
}

/**
 * Releases are announced by the statements themselves (`pg_notify` on {@link RELEASE_CHANNEL}, sent at commit),
 * so every process hears them, this one through its listening client.
 */
function listeningNotifier(db: PgRunner): TableNotifier {
  const listener = new PgListener(db, RELEASE_CHANNEL)
  return {
    args: (key) => [RELEASE_CHANNEL, channelPayload(key)],
    changed: () => undefined,
    subscribe: (key, kind) => listener.subscribe(channelPayload(key), kind),
    close: () => listener.close(),
  }
}
