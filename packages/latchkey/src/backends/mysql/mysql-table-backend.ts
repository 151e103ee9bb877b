import { SqlTableBackend } from '../sql/sql-table-backend.js'
import { readLiveSummary } from '../sql/sql-table-grant.js'
import type { SqlPool, SqlSession, TableDialect, TableNotifier } from '../sql/table-dialect.js'
import { TablePoller } from '../sql/table-poller.js'
import { isFatal, type MysqlConnection, type MysqlResultHeader, type MysqlRunner, matchedRows } from './mysql-client.js'
import { MYSQL_INSPECT_SQL } from './mysql-inspect-sql.js'
import { MYSQL_ADD_PERMITS, MYSQL_HAS_PERMITS, MYSQL_MIGRATION_STATEMENTS, TABLE_SQL } from './mysql-schema.js'

/**
 * The `'table'` strategy on MySQL 8 / MariaDB 10.6+: {@link SqlTableBackend} over {@link mysqlTableDialect}.
 *
 * Why it cannot deadlock: every statement finds its rows by primary key (or by the `lock_key` prefix of the
 * primary key) and runs under READ COMMITTED, set for each transaction. There, InnoDB locks only the records a
 * primary-key lookup returns; the gap and next-key locks that REPEATABLE READ takes on a range scan or on a
 * miss (two transactions that both missed then both insert into the same gap, and each waits for the other)
 * are not taken. A missing lock row is created by an autocommit `INSERT IGNORE` before the transaction, never
 * inside it, so no transaction holds a shared duplicate-key lock that it later tries to upgrade (the classic
 * three-inserter deadlock). The remaining row locks are always taken in one order (lock row, holders,
 * waiters), so no cycle can form. Needs `binlog_format` ROW or MIXED if binary logging is on (InnoDB refuses
 * READ COMMITTED with STATEMENT). A release in this process wakes one of its waiters at once; each process learns
 * of releases elsewhere from one poll per waited-for lock ({@link TablePoller}), not one per waiter.
 */
export class MysqlTableBackend extends SqlTableBackend {
  constructor(db: MysqlRunner) {
    super(mysqlTableDialect(db))
  }
}

/** MySQL's part of the `'table'` strategy. */
export function mysqlTableDialect(db: MysqlRunner): TableDialect {
  const pool: SqlPool = {
    with: (fn) => db.with((c) => fn(session(c))),
    run: (sql, values) => db.with((c) => session(c).run(sql, values)),
  }
  return {
    name: 'mysql',
    // Every process's own poller wakes its waiters on a release anywhere (see pollingNotifier), so to the core
    // releases are announced: it tries on its own only after its long fallback pause or the holder's expiry.
    notifications: 'global',
    pool,
    sql: TABLE_SQL,
    inspect: MYSQL_INSPECT_SQL,
    notifier: pollingNotifier(pool),
    encodeKey: (key) => key,
    // Applies to the next transaction only, so the pool connection's own session level is untouched.
    begin: ['SET TRANSACTION ISOLATION LEVEL READ COMMITTED', 'START TRANSACTION'],
    isFatal,
    ensureKeyInTransaction: false,
    // CREATE TABLE IF NOT EXISTS is safe to race; no transaction, since MySQL commits around DDL anyway.
    migrate: () =>
      pool.with(async (s) => {
        for (const statement of MYSQL_MIGRATION_STATEMENTS) await s.run(statement, [])
        const { rows } = await s.run<{ n: number | string }>(MYSQL_HAS_PERMITS, [])
        if (Number(rows[0]?.n ?? 0) > 0) return
        // A concurrent backend may add it first: its "duplicate column" (ER_DUP_FIELDNAME) is success here.
        await s.run(MYSQL_ADD_PERMITS, []).catch((error: unknown) => {
          if ((error as { errno?: unknown }).errno !== 1060) throw error
        })
      }),
  }
}

/** A mysql2 connection as a {@link SqlSession}: a SELECT's rows, or the rows an UPDATE / DELETE matched. */
function session(c: MysqlConnection): SqlSession {
  return {
    async run<R>(sql: string, values: readonly unknown[]) {
      const [result] = await c.query(sql, [...values])
      if (Array.isArray(result)) return { rows: result as R[], count: result.length }
      return { rows: [], count: matchedRows(result as MysqlResultHeader) }
    },
  }
}

/**
 * MySQL has no server push: one {@link TablePoller} per backend reads each waited-for lock's holders once per
 * interval for all of this process's waiters and wakes as many as there are free slots; a release in this
 * process wakes one at once.
 */
function pollingNotifier(pool: SqlPool): TableNotifier {
  const poller = new TablePoller((key) => readLiveSummary(pool, TABLE_SQL.summary, key, ''))
  return {
    args: () => [],
    changed: (key) => poller.changed(key),
    subscribe: (key, kind) => poller.subscribe(key, kind),
    sawFree: (key) => poller.sawFree(key),
    close: async () => poller.close(),
  }
}
