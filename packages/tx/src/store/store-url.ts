import { createRequire } from 'node:module'
import { redactUrl } from 'latchkey'
import { TxError } from '../errors.js'
import { type MysqlPoolLike, mysqlStore } from './mysql-store.js'
import { type PgPoolLike, postgresStore } from './postgres-store.js'
import { sqliteStore } from './sqlite-store.js'
import type { TxStore } from './types.js'

const require = createRequire(import.meta.url)

function peer<T>(name: string, what: string): T {
  try {
    return require(name) as T
  } catch (error) {
    throw new TxError(`latchkey-tx: a ${what} store needs ${name}: npm install ${name}`, {
      code: 'MISSING_PEER',
      cause: error,
    })
  }
}

/**
 * A store from a URL: `sqlite:./tx.db`, `postgres://user@host:5432/db`, `mysql://user@host:3306/db`. The store
 * owns the pool or file it opens here and closes it in `close()`. `?tablePrefix=x_` picks the tables.
 *
 * @example
 * const store = storeFromUrl('sqlite:./tx.db')
 */
export function storeFromUrl(url: string): TxStore {
  if (typeof url !== 'string' || url.length === 0) {
    throw new TypeError(`latchkey-tx: store must be a URL string or a TxStore, received ${String(url)}`)
  }
  if (url.startsWith('sqlite:')) {
    const [path = '', query = ''] = url.slice('sqlite:'.length).split('?')
    const prefix = new URLSearchParams(query).get('tablePrefix')
    return sqliteStore({ path, ...(prefix === null ? {} : { tablePrefix: prefix }) })
  }
  let parsed: URL
  try {
    parsed = new URL(url)
  } catch {
    throw new TypeError(`latchkey-tx: store URL ${redactUrl(url)} cannot be parsed`)
  }
  const prefix = parsed.searchParams.get('tablePrefix')
  parsed.searchParams.delete('tablePrefix')
  const tablePrefix = prefix === null ? {} : { tablePrefix: prefix }
  if (parsed.protocol === 'postgres:' || parsed.protocol === 'postgresql:') {
    const pg = peer<{ Pool: new (o: object) => PgPoolLike & { on(e: string, f: () => void): void } }>(
      'pg',
      'PostgreSQL',
    )
    const pool = new pg.Pool({ connectionString: parsed.toString() })
    pool.on('error', () => undefined) // an idle client killed by the server: the pool replaces it
    return postgresStore({ pool, ownsPool: true, ...tablePrefix })
  }
  if (parsed.protocol === 'mysql:' || parsed.protocol === 'mariadb:') {
    parsed.protocol = 'mysql:'
    const mysql = peer<{ createPool(uri: string): MysqlPoolLike }>('mysql2/promise', 'MySQL')
    return mysqlStore({ pool: mysql.createPool(parsed.toString()), ownsPool: true, ...tablePrefix })
  }
  throw new RangeError(
    `latchkey-tx: store URL must start with sqlite:, postgres:// or mysql://, received ${redactUrl(url)}`,
  )
}
