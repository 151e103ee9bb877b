import { requirePeer } from '../../backend/optional-peer.js'
import type { Backend } from '../../backend/types.js'
import { checkQueryKeys, choiceOption, numberOption, parseSingleHostUrl } from '../../backend/url-parts.js'
import { connectionOptions, databaseOf, owningPool, type UrlBackendOptions, urlBackendOptions } from '../sql/sql-url.js'
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

const EXAMPLE = 'postgres://postgres@127.0.0.1:5432/test'

/** A checked `postgres://` URL: the pool options and latchkey's options. */
export interface PostgresUrl {
  readonly pool: Record<string, unknown>
  readonly strategy: 'table' | 'advisory' | undefined
  readonly connectTimeoutMs: number | undefined
}

/** Parses and checks a `postgres://user:pass@host:port/db?...` URL; `RangeError` naming the bad part. */
export function parsePostgresUrl(url: string): PostgresUrl {
  const checked = parseSingleHostUrl(url, 5432, EXAMPLE)
  const { parts } = checked
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
      ...connectionOptions(checked, databaseOf(checked.parts.path, EXAMPLE, url)),
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
  make: (options: UrlBackendOptions<PgPool, NonNullable<PostgresUrl['strategy']>>) => Backend,
): Promise<Backend> {
  const parsed = parsePostgresUrl(url)
  const pg = requirePeer<PgModule>('pg', 'postgres', 'pg package (8.x): npm install pg')
  const pool = new pg.Pool(parsed.pool)
  // An idle client dropped by the server is reported here; the pool replaces it on the next connect.
  pool.on('error', () => undefined)
  return owningPool(pool, (p) => make(urlBackendOptions(p, parsed)))
}
