import { requirePeer } from '../../backend/optional-peer.js'
import type { Backend } from '../../backend/types.js'
import {
  checkQueryKeys,
  choiceOption,
  formatServer,
  numberOption,
  parseSingleHostUrl,
  shownUrl,
} from '../../backend/url-parts.js'
import type { MysqlPool } from './mysql-client.js'

interface Mysql2Promise {
  createPool(options: Record<string, unknown>): MysqlPool & { end(): Promise<void> }
}

/** latchkey's own options, then the mysql2 connection options a URL may pass through. */
const KNOWN = ['strategy', 'connectionLimit', 'connectTimeoutMs', 'charset', 'timezone', 'ssl'] as const

/** A checked `mysql://` URL: the pool options and latchkey's options. */
export interface MysqlUrl {
  readonly pool: Record<string, unknown>
  readonly strategy: 'table' | 'get_lock' | 'for_update' | undefined
  readonly connectTimeoutMs: number | undefined
  /** `host:port`, for messages. */
  readonly label: string
}

/** Parses and checks a `mysql://user:pass@host:port/db?...` URL; `RangeError` naming the bad part. */
export function parseMysqlUrl(url: string): MysqlUrl {
  const { parts, server, username, password } = parseSingleHostUrl(url, 3306, 'mysql://root@127.0.0.1:3306/test')
  const db = /^\/([^/]+)\/?$/.exec(parts.path)?.[1]
  if (db === undefined && parts.path !== '' && parts.path !== '/') {
    throw new RangeError(
      `latchkey: the path of a mysql URL is one database name (mysql://host:3306/test), received ${JSON.stringify(parts.path)} in ${shownUrl(url)}`,
    )
  }
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
      host: server.host,
      port: server.port,
      ...(username === undefined || username === '' ? {} : { user: username }),
      ...(password === undefined ? {} : { password }),
      ...(db === undefined ? {} : { database: decodeURIComponent(db) }),
      connectionLimit: numberOption(parts.query, 'connectionLimit', 1, url) ?? 10,
      ...passThrough,
    },
    strategy: choiceOption(parts.query, 'strategy', ['table', 'get_lock', 'for_update'] as const, url),
    connectTimeoutMs: numberOption(parts.query, 'connectTimeoutMs', 1, url),
    label: formatServer(server),
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
  make: (options: { pool: MysqlPool; strategy: MysqlUrl['strategy']; connectTimeoutMs: number | undefined }) => Backend,
): Promise<Backend> {
  const parsed = parseMysqlUrl(url)
  const mysql = requirePeer<Mysql2Promise>('mysql2/promise', 'mysql', 'mysql2 package (3.x): npm install mysql2')
  const pool = mysql.createPool(parsed.pool)
  let backend: Backend
  try {
    backend = make({ pool, strategy: parsed.strategy, connectTimeoutMs: parsed.connectTimeoutMs })
  } catch (error) {
    await pool.end()
    throw error
  }
  const close = backend.close.bind(backend)
  return Object.assign(backend, {
    close: async () => {
      await close()
      await pool.end()
    },
  })
}
