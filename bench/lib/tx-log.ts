/**
 * The coordinator's log for the latchkey-tx benchmark: a store on a fresh table prefix (dropped at the end), on
 * a pool whose statements are counted and timed by kind (log write, lease, other), to say where the time goes.
 */
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { Locks } from 'latchkey'
import { mysqlStore, postgresStore, sqliteStore, type TxStore } from 'latchkey-tx'
import mysql from 'mysql2/promise'
import pg from 'pg'
import { type DbKind, MYSQL_URL, PG_URL } from './tx-participant.js'

/** Statement counts and time (ms, summed over concurrent statements) by what they are for. */
export interface StatementTally {
  count: Record<string, number>
  ms: Record<string, number>
  /** When set, every statement's kind and first line are appended (to show one transaction's statements). */
  trace?: string[]
}

/** A log store and what it takes to tear it down. */
export interface BenchLog {
  readonly store: TxStore
  readonly tally: StatementTally
  /** Leases for the coordinator when the store's default (row leases in the log) must not be used. */
  readonly locks?: Locks
  /** Drops the log tables (after the coordinators using the store are closed). */
  close(): Promise<void>
}

/** What a statement is for: `lease` (latchkey's lock tables), `begin/commit`, `log-read`, `log-write`. */
export function classify(sql: string): string {
  const s = sql.trimStart().toUpperCase()
  // latchkey's lock tables (latchkey_locks, _holders, ...); the bench's log tables are prefixed bench_tx_.
  if (s.includes('LATCHKEY_')) return 'lease'
  if (/^(BEGIN|COMMIT|ROLLBACK|START TRANSACTION|SET TRANSACTION)/.test(s)) return 'begin/commit'
  return logKind(s)
}

const logKind = (s: string) => (s.startsWith('SELECT') ? 'log-read' : 'log-write')

function tallied<T extends object>(target: T, tally: StatementTally): T {
  return new Proxy(target, {
    get(t, prop, receiver) {
      const value = Reflect.get(t, prop, receiver)
      if (prop === 'query' && typeof value === 'function') {
        return async (sql: unknown, ...rest: unknown[]) => {
          const text = typeof sql === 'string' ? sql : String((sql as { text?: string })?.text ?? '')
          const kind = classify(text)
          const started = performance.now()
          try {
            return await value.call(t, sql, ...rest)
          } finally {
            tally.count[kind] = (tally.count[kind] ?? 0) + 1
            tally.ms[kind] = (tally.ms[kind] ?? 0) + performance.now() - started
            tally.trace?.push(`${kind}: ${text.replace(/\s+/g, ' ').slice(0, 110)}`)
          }
        }
      }
      if ((prop === 'connect' || prop === 'getConnection') && typeof value === 'function') {
        return async () => {
          const started = performance.now()
          const client = await value.call(t)
          tally.count.checkout = (tally.count.checkout ?? 0) + 1
          tally.ms.checkout = (tally.ms.checkout ?? 0) + performance.now() - started
          return tallied(client, tally)
        }
      }
      return typeof value === 'function' ? value.bind(t) : value
    },
  })
}

/** Opens the log of kind `kind` on tables prefixed `bench_tx_<suffix>_`. */
export async function openLog(kind: DbKind, suffix: string, poolSize: number): Promise<BenchLog> {
  const tablePrefix = `bench_tx_${suffix}_`
  const tally: StatementTally = { count: {}, ms: {} }
  const tables = ['global', 'branch', 'history'].map((t) => tablePrefix + t).join(', ')
  if (kind === 'postgres') {
    const pool = new pg.Pool({ connectionString: PG_URL, max: poolSize })
    const store = postgresStore({ pool: tallied(pool, tally) as never, tablePrefix })
    return {
      store,
      tally,
      async close() {
        await store.close()
        await pool.query(`DROP TABLE IF EXISTS ${tables}`)
        await pool.end()
      },
    }
  }
  if (kind === 'mariadb') {
    const pool = mysql.createPool({ uri: MYSQL_URL, connectionLimit: poolSize })
    const store = mysqlStore({ pool: tallied(pool, tally) as never, tablePrefix })
    return {
      store,
      tally,
      async close() {
        await store.close()
        await pool.query(`DROP TABLE IF EXISTS ${tables}`)
        await pool.end()
      },
    }
  }
  const path = join(tmpdir(), `bench-tx-log-${suffix}.db`)
  // The coordinator's leases are row leases in the log itself: no second connection, no lock file.
  const store = sqliteStore({ path, tablePrefix })
  return {
    store,
    tally,
    async close() {
      await store.close()
      const { rm } = await import('node:fs/promises')
      for (const f of ['', '-wal', '-shm', '-latchkey', '-leases', '-leases-wal', '-leases-shm', '-leases-latchkey']) {
        await rm(path + f, { force: true, recursive: true })
      }
    },
  }
}
