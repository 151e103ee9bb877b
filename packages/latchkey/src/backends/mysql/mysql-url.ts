import { requirePeer } from '../../backend/optional-peer.js'
import type { Backend } from '../../backend/types.js'
import { checkQueryKeys, choiceOption, numberOption, parseSingleHostUrl, shownUrl } from '../../backend/url-parts.js'
import { connectionOptions, databaseOf, owningPool, type UrlBackendOptions, urlBackendOptions } from '../sql/sql-url.js'
import type { MysqlPool } from './mysql-client.js'

interface Mysql2Promise {
  createPool(options: Record<string, unknown>): MysqlPool & { end(): Promise<void> }
}

/** latchkey's own options, then the mysql2 connection options a URL may pass through. */
const KNOWN = ['strategy', 'connectionLimit', 'connectTimeoutMs', 'charset', 'timezone', 'ssl'] as const

const EXAMPLE = 'mysql://root@127.0.0.1:3306/test'

/** A checked `mysql://` URL: the pool options and latchkey's options. */
export interface MysqlUrl {
  readonly pool: Record<string, unknown>
  readonly strategy: 'table' | 'get_lock' | 'for_update' | undefined
  readonly connectTimeoutMs: number | undefined
}

/** Parses and checks a `mysql://user:pass@host:port/db?...` URL; `RangeError` naming the bad part. */
export function parseMysqlUrl(url: string): MysqlUrl {
  const checked = parseSingleHostUrl(url, 3306, EXAMPLE)
  const { parts } = checked
  checkQueryKeys(parts.query, KNOWN, 'mysql', url)
  const passThrough: Record<string, unknown> = {}
  for (const key of ['charset', 'timezone'] as const) {
    const value = parts.query.get(key)
    if (value !== null) passThrough[key] = value
  }
  const ssl = parts.query.get('ssl')
  if (ssl !== null) passThrough.ssl = parseSsl(ssl, url)
  return {
    pool: {
      ...connectionOptions(checked, databaseOf(checked.parts.path, EXAMPLE, url)),
      connectionLimit: numberOption(parts.query, 'connectionLimit', 1, url) ?? 10,
      ...passThrough,
    },
    strategy: choiceOption(parts.query, 'strategy', ['table', 'get_lock', 'for_update'] as const, url),
    connectTimeoutMs: numberOption(parts.query, 'connectTimeoutMs', 1, url),
  }
}

/** mysql2 reads `ssl` from a URL as JSON: `true`, or an object of TLS options. */
function parseSsl(text: string, url: string): unknown {
  try {
    const value: unknown = JSON.parse(text)
    if (value === true || (typeof value === 'object' && value !== null)) return value
  } catch {
    // reported below
  }
  throw new RangeError(`latchkey: URL option ssl must be true or a JSON object of TLS options, in ${shownUrl(url)}`)
}

/**
 * Opens a mysql2 pool for a `mysql://user:pass@host:port/db?strategy=get_lock&connectionLimit=10` URL
 * and a backend on it that owns the pool (its `close()` ends the pool). For `backendFromUrl`.
 *
 * @example
 * const backend = await openMysqlBackend('mysql://root@127.0.0.1:3306/test', (o) => mysqlBackend(o))
 */
export async function openMysqlBackend(
  url: string,
  make: (options: UrlBackendOptions<MysqlPool, NonNullable<MysqlUrl['strategy']>>) => Backend,
): Promise<Backend> {
  const parsed = parseMysqlUrl(url)
  const mysql = requirePeer<Mysql2Promise>('mysql2/promise', 'mysql', 'mysql2 package (3.x): npm install mysql2')
  const pool = mysql.createPool(parsed.pool)
  return owningPool(pool, (p) => make(urlBackendOptions(p, parsed)))
}
