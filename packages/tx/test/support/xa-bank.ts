/**
 * Two account tables for the XA tests, one on MariaDB (account 1) and one on PostgreSQL (account 2), with a
 * random table name so parallel runs never meet, and what is left prepared on each server for a gid.
 */
import { randomBytes } from 'node:crypto'
import mysql from 'mysql2/promise'
import pg from 'pg'
import type { XaTx } from '../../src/index.js'
import { MYSQL_URL, POSTGRES_URL } from './databases.js'

export interface XaBank {
  readonly table: string
  readonly maria: mysql.Pool
  readonly pg: pg.Pool
  /** Account 1 (MariaDB) and account 2 (PostgreSQL). */
  balances(): Promise<{ maria: number; pg: number }>
  /** Our branches still prepared on each server, for gids starting with `gidPrefix`. */
  prepared(gidPrefix: string): Promise<string[]>
  drop(): Promise<void>
}

export async function openXaBank(start = 100): Promise<XaBank> {
  const table = `xa_${randomBytes(4).toString('hex')}_acct`
  const maria = mysql.createPool({ uri: MYSQL_URL, connectionLimit: 6 })
  const pgPool = new pg.Pool({ connectionString: POSTGRES_URL, max: 6 })
  pgPool.on('error', () => undefined)
  await maria.query(`CREATE TABLE ${table} (id INT PRIMARY KEY, bal INT NOT NULL) ENGINE=InnoDB`)
  await maria.query(`INSERT INTO ${table} VALUES (1, ?)`, [start])
  await pgPool.query(`CREATE TABLE ${table} (id INT PRIMARY KEY, bal INT NOT NULL)`)
  await pgPool.query(`INSERT INTO ${table} VALUES (2, $1)`, [start])
  return {
    table,
    maria,
    pg: pgPool,
    async balances() {
      const [rows] = await maria.query(`SELECT bal FROM ${table} WHERE id = 1`)
      const { rows: p } = await pgPool.query(`SELECT bal FROM ${table} WHERE id = 2`)
      return { maria: Number((rows as { bal: number }[])[0]?.bal), pg: Number(p[0]?.bal) }
    },
    async prepared(gidPrefix) {
      const [rows] = await maria.query('XA RECOVER')
      const m = (rows as { data: unknown }[])
        .map((r) => `maria:${String(r.data)}`)
        .filter((d) => d.startsWith(`maria:${gidPrefix}`))
      const { rows: p } = await pgPool.query('SELECT gid FROM pg_prepared_xacts WHERE starts_with(gid, $1)', [
        `lktx:${gidPrefix}`,
      ])
      return [...m, ...p.map((r) => `pg:${r.gid}`)]
    },
    async drop() {
      await maria.query(`DROP TABLE IF EXISTS ${table}`)
      await pgPool.query(`DROP TABLE IF EXISTS ${table}`)
      await maria.end()
      await pgPool.end()
    },
  }
}

/** The transfer every XA test runs: `amount` from account 1 (MariaDB) to account 2 (PostgreSQL). */
export function transferBody(table: string, amount: number) {
  return async (x: XaTx): Promise<string> => {
    await x.branch('maria', (c: mysql.PoolConnection) =>
      c.query(`UPDATE ${table} SET bal = bal - ? WHERE id = 1`, [amount]),
    )
    await x.branch('pg', (c: pg.PoolClient) => c.query(`UPDATE ${table} SET bal = bal + $1 WHERE id = 2`, [amount]))
    return 'moved'
  }
}
