import type { MysqlXaConnection, MysqlXaPool, XaConnection, XaResource } from './resource.js'
import { XaUnsupportedError } from './xa-unsupported-error.js'
import { mysqlXid, parseMysqlRecoverRow } from './xid.js'

/** MySQL's and MariaDB's "unknown XID": the branch is not (or no longer) prepared on this server. */
const XAER_NOTA = 1397

/**
 * Whether a server version keeps a prepared XA branch when its session ends, which recovery relies on: a
 * coordinator that dies must leave its prepared branches for another to commit or roll back. MariaDB rolled
 * them back on disconnect until 10.5.2 (MDEV-742); MySQL until 5.7.7. Returns the reason when it cannot.
 */
export function mysqlXaLimit(version: string): string | undefined {
  const m = /^(\d+)\.(\d+)\.(\d+)/.exec(version)
  if (m === null) return `its version "${version}" is not one this library knows`
  const n = Number(m[1]) * 10_000 + Number(m[2]) * 100 + Number(m[3])
  if (/mariadb/i.test(version)) {
    return n >= 100_502
      ? undefined
      : `MariaDB ${m[0]} rolls prepared XA branches back when their session ends (MDEV-742); use MariaDB 10.5.2 or later`
  }
  return n >= 50_707
    ? undefined
    : `MySQL ${m[0]} rolls prepared XA branches back when their session ends; use MySQL 5.7.7 or later`
}

const rowsOf = (result: [unknown, unknown]) => (Array.isArray(result[0]) ? result[0] : []) as Record<string, unknown>[]
const errno = (error: unknown) => (error as { errno?: unknown } | null)?.errno

/** XA on MariaDB / MySQL through a mysql2/promise pool: `XA START / END / PREPARE / COMMIT / ROLLBACK / RECOVER`. */
export function mysqlXaResource(pool: MysqlXaPool): XaResource {
  let facts: Promise<{ identity: string; limit: string | undefined }> | undefined
  const learn = () => {
    facts ??= withConnection(pool, async (c) => {
      const row = rowsOf(await c.query('SELECT VERSION() AS v, @@hostname AS h, @@port AS p, DATABASE() AS d'))[0]
      return { identity: `mysql:${row?.h}:${row?.p}/${row?.d}`, limit: mysqlXaLimit(String(row?.v)) }
    }).catch((error: unknown) => {
      facts = undefined
      throw error
    })
    return facts
  }
  const recover = async (c: MysqlXaConnection) =>
    rowsOf(await c.query('XA RECOVER')).flatMap((r) => parseMysqlRecoverRow(r) ?? [])
  return {
    dialect: 'mysql',
    identity: async () => (await learn()).identity,
    async check() {
      const { identity, limit } = await learn()
      if (limit !== undefined) throw new XaUnsupportedError(identity, 'version', `${identity} cannot do XA: ${limit}`)
    },
    async open() {
      return mysqlConnection(await pool.getConnection())
    },
    recover: () => withConnection(pool, recover),
    settle: (xid, commit) =>
      withConnection(pool, async (c) => {
        try {
          await c.query(`XA ${commit ? 'COMMIT' : 'ROLLBACK'} ${mysqlXid(xid)}`)
          return true
        } catch (error) {
          if (errno(error) !== XAER_NOTA) throw error
          // Unknown here: finished before (a repeated commit), or prepared but still attached to a live session
          // (MariaDB answers the same). Only the second is still listed by XA RECOVER.
          return !(await recover(c)).some((x) => x.gid === xid.gid && x.branch === xid.branch)
        }
      }),
  }
}

function mysqlConnection(c: MysqlXaConnection): XaConnection {
  return {
    raw: c,
    start: async (xid) => void (await c.query(`XA START ${mysqlXid(xid)}`)),
    async prepare(xid) {
      await c.query(`XA END ${mysqlXid(xid)}`)
      await c.query(`XA PREPARE ${mysqlXid(xid)}`)
    },
    async rollbackActive(xid) {
      // XA END fails when the branch is already idle (ended): the rollback is what matters.
      await c.query(`XA END ${mysqlXid(xid)}`).catch(() => undefined)
      await c.query(`XA ROLLBACK ${mysqlXid(xid)}`)
    },
    finish: async (xid, commit) => void (await c.query(`XA ${commit ? 'COMMIT' : 'ROLLBACK'} ${mysqlXid(xid)}`)),
    release: (destroy) => (destroy ? c.destroy() : c.release()),
  }
}

async function withConnection<T>(pool: MysqlXaPool, fn: (c: MysqlXaConnection) => Promise<T>): Promise<T> {
  const c = await pool.getConnection()
  try {
    return await fn(c)
  } finally {
    c.release()
  }
}
