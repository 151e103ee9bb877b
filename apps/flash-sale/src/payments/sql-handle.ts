/**
 * One way to run `?`-placeholder SQL on the three databases the payment service may use, whether the handle is
 * a pool (autocommit) or the open transaction `latchkey-tx/fastify` hands to a branch handler.
 */
import type Database from 'better-sqlite3'
import { redactUrl } from 'latchkey'
import { numbered } from '../store/sql-sale-store.js'

/** The payment database's engine. */
export type Dialect = 'sqlite' | 'postgres' | 'mysql'

/** Runs statements with `?` placeholders. */
export interface Sql {
  all<T>(sql: string, params?: readonly unknown[]): Promise<T[]>
  /** Resolves to the number of rows changed. */
  run(sql: string, params?: readonly unknown[]): Promise<number>
}

interface PgLike {
  query(sql: string, params?: unknown[]): Promise<{ rows: unknown[]; rowCount: number | null }>
}
interface MysqlLike {
  query(sql: string, params?: unknown[]): Promise<[unknown, unknown]>
}

/**
 * `handle` of `dialect` as {@link Sql}: a better-sqlite3 Database, a pg Pool or client, a mysql2/promise pool or
 * connection.
 *
 * @example
 * const sql = sqlOn('sqlite', new Database('pay.db'))
 * await sql.run('UPDATE acct SET bal = bal - ? WHERE id = ?', [5, 'u1'])
 */
export function sqlOn(dialect: Dialect, handle: unknown): Sql {
  if (dialect === 'sqlite') {
    const db = handle as Database.Database
    return {
      all: async <T>(sql: string, params: readonly unknown[] = []) => db.prepare(sql).all(...params) as T[],
      run: async (sql, params = []) => db.prepare(sql).run(...params).changes,
    }
  }
  if (dialect === 'postgres') {
    const pg = handle as PgLike
    return {
      all: async <T>(sql: string, params: readonly unknown[] = []) =>
        (await pg.query(numbered(sql), [...params])).rows as T[],
      run: async (sql, params = []) => (await pg.query(numbered(sql), [...params])).rowCount ?? 0,
    }
  }
  const my = handle as MysqlLike
  return {
    all: async <T>(sql: string, params: readonly unknown[] = []) => (await my.query(sql, [...params]))[0] as T[],
    run: async (sql, params = []) =>
      ((await my.query(sql, [...params]))[0] as { affectedRows?: number }).affectedRows ?? 0,
  }
}

/** The dialect of a database URL: `sqlite:PATH`, `postgres://…`, `mysql://…` / `mariadb://…`. */
export function dialectOf(url: string): Dialect {
  if (/^sqlite:/i.test(url)) return 'sqlite'
  if (/^postgres(ql)?:\/\//i.test(url)) return 'postgres'
  if (/^(mysql|mariadb):\/\//i.test(url)) return 'mysql'
  throw new RangeError(
    `payments: a database URL must be sqlite:PATH, postgres://user@host:port/db or mysql://user@host:port/db, received ${redactUrl(url)}`,
  )
}
