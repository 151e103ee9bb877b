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
import type { PgPool } from './pg-client.js'

interface PgModule {
  Pool: new (
    options: Record<string, unknown>,
  ) => PgPool & {
    end(): Promise<void>
    on(event: 'error', listener: (error: Error) => void): unknown
  }
}

/** latchkey's own options, then the node-postgres connection options a URL may pass through. */
const KNOWN = ['strategy', 'max', 'connectTimeoutMs', 'sslmode', 'application_name', 'options'] as const

/** A checked `postgres://` URL: the pool options and latchkey's options. */
export interface PostgresUrl {
  readonly pool: Record<string, unknown>
  readonly strategy: 'table' | 'advisory' | undefined
  readonly connectTimeoutMs: number | undefined
  /** `host:port`, for messages. */
  readonly label: string
}

/** Parses and checks a `postgres://user:pass@host:port/db?...` URL; `RangeError` naming the bad part. */
export function parsePostgresUrl(url: string): PostgresUrl {
  const { parts, server, username, password } = parseSingleHostUrl(url, 5432, 'postgres://postgres@127.0.0.1:5432/test')
  const db = /^\/([^/]+)\/?$/.exec(parts.path)?.[1]
  if (db === undefined && parts.path !== '' && parts.path !== '/') {
    throw new RangeError(
      `latchkey: the path of a postgres URL is one database name (postgres://host:5432/test), received ${JSON.stringify(parts.path)} in ${shownUrl(url)}`,
    )
  }
  checkQueryKeys(parts.query, KNOWN, parts.scheme, url)
  const sslmode = choiceOption(
    parts.query,
    'sslmode',
    ['disable', 'prefer', 'require', 'verify-ca', 'verify-full', 'no-verify'] as const,
    url,
  )
  const appName = parts.query.get('application_name')
  const options = parts.query.get('options')
  return {
    pool: {
      host: server.host,
      port: server.port,
      ...(username === undefined || username === '' ? {} : { user: username }),
      ...(password === undefined ? {} : { password }),
      ...(db === undefined ? {} : { database: decodeURIComponent(db) }),
      max: numberOption(parts.query, 'max', 1, url) ?? 10,
      // node-postgres: "disable" is plain TCP, "no-verify" TLS without checks, the rest verified TLS.
      ...(sslmode === undefined || sslmode === 'disable'
        ? {}
        : { ssl: sslmode === 'no-verify' || sslmode === 'prefer' ? { rejectUnauthorized: false } : {} }),
      ...(appName === null ? {} : { application_name: appName }),
      ...(options === null ? {} : { options }),
    },
    strategy: choiceOption(parts.query, 'strategy', ['table', 'advisory'] as const, url),
    connectTimeoutMs: numberOption(parts.query, 'connectTimeoutMs', 1, url),
    label: formatServer(server),
  }
}

/**
 * Opens a pg pool for a `postgres://user:pass@host:port/db?strategy=advisory&max=10` URL and a backend on
 * it that owns the pool (its `close()` ends the pool). For `backendFromUrl`.
 *
 * @example
 * const backend = await openPostgresBackend('postgres://postgres@127.0.0.1:5432/test', (o) => postgresBackend(o))
 */
export async function openPostgresBackend(
  url: string,
  make: (options: { pool: PgPool; strategy: PostgresUrl['strategy']; connectTimeoutMs: number | undefined }) => Backend,
): Promise<Backend> {
  const parsed = parsePostgresUrl(url)
  const pg = requirePeer<PgModule>('pg', 'postgres', 'pg package (8.x): npm install pg')
  const pool = new pg.Pool(parsed.pool)
  // An idle client dropped by the server is reported here; the pool replaces it on the next connect.
  pool.on('error', () => undefined)
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
