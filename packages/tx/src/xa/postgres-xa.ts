import type { PgXaClient, PgXaPool, XaConnection, XaResource } from './resource.js'
import { XaUnsupportedError } from './xa-unsupported-error.js'
import { PG_GID_PREFIX, parsePgXid, pgXid } from './xid.js'

/** `undefined_object`: no prepared transaction with that id (finished before, or never prepared). */
const UNDEFINED_OBJECT = '42704'
/** `object_not_in_prerequisite_state`: another session is finishing that prepared transaction right now ("busy"). */
const BUSY = '55000'

const code = (error: unknown) => (error as { code?: unknown } | null)?.code

/**
 * Two-phase commit on PostgreSQL through a `pg` Pool: `BEGIN`, the branch's statements, `PREPARE TRANSACTION`,
 * then `COMMIT PREPARED` / `ROLLBACK PREPARED` (from any session). Needs `max_prepared_transactions > 0`.
 */
export function postgresXaResource(pool: PgXaPool): XaResource {
  let facts: Promise<{ identity: string; max: number }> | undefined
  const learn = () => {
    facts ??= withClient(pool, async (c) => {
      const { rows } = await c.query(
        `SELECT current_setting('max_prepared_transactions')::int AS m, current_database() AS d,
          coalesce(host(inet_server_addr()), 'local') AS h, coalesce(inet_server_port(), 0) AS p`,
      )
      const row = rows[0] ?? {}
      return { identity: `postgres:${row.h}:${row.p}/${row.d}`, max: Number(row.m) }
    }).catch((error: unknown) => {
      facts = undefined
      throw error
    })
    return facts
  }
  const recover = async (c: PgXaClient) => {
    const { rows } = await c.query(
      'SELECT gid FROM pg_prepared_xacts WHERE database = current_database() AND starts_with(gid, $1)',
      [PG_GID_PREFIX],
    )
    return rows.flatMap((r) => parsePgXid(String(r.gid)) ?? [])
  }
  return {
    dialect: 'postgres',
    identity: async () => (await learn()).identity,
    async check() {
      const { identity, max } = await learn()
      if (max > 0) return
      throw new XaUnsupportedError(
        identity,
        'max_prepared_transactions',
        `${identity} cannot prepare transactions: max_prepared_transactions = ${max} (PostgreSQL's default, which ` +
          'turns two-phase commit off). Set it to at least the number of branches that may be prepared at once ' +
          '(max_connections is the usual choice) and restart the server: ' +
          'ALTER SYSTEM SET max_prepared_transactions = 100, then restart',
      )
    },
    async open() {
      return pgConnection(await pool.connect())
    },
    recover: () => withClient(pool, recover),
    settle: (xid, commit) =>
      withClient(pool, async (c) => {
        try {
          await c.query(`${commit ? 'COMMIT' : 'ROLLBACK'} PREPARED '${pgXid(xid)}'`)
          return true
        } catch (error) {
          if (code(error) === BUSY) return false
          if (code(error) !== UNDEFINED_OBJECT) throw error
          // Not prepared (any more): finished before, so a repeated commit or rollback counts as done.
          return !(await recover(c)).some((x) => x.gid === xid.gid && x.branch === xid.branch)
        }
      }),
  }
}

function pgConnection(c: PgXaClient): XaConnection {
  return {
    raw: c,
    start: async () => void (await c.query('BEGIN')),
    async prepare(xid) {
      const r = (await c.query(`PREPARE TRANSACTION '${pgXid(xid)}'`)) as { command?: string }
      // A transaction that hit an error (caught by the branch function) is rolled back by PREPARE TRANSACTION,
      // which then reports ROLLBACK instead of failing: that branch has no effect and must not be committed.
      if (r.command === 'ROLLBACK')
        throw new Error(`PREPARE TRANSACTION rolled back branch ${xid.branch}: an earlier statement failed`)
    },
    rollbackActive: async () => void (await c.query('ROLLBACK')),
    finish: async (xid, commit) => void (await c.query(`${commit ? 'COMMIT' : 'ROLLBACK'} PREPARED '${pgXid(xid)}'`)),
    release: (destroy) => c.release(destroy ? true : undefined),
  }
}

async function withClient<T>(pool: PgXaPool, fn: (c: PgXaClient) => Promise<T>): Promise<T> {
  const c = await pool.connect()
  try {
    return await fn(c)
  } finally {
    c.release()
  }
}
