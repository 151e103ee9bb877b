import { requirePeer } from '../../backend/optional-peer.js'
import type { Backend } from '../../backend/types.js'
import type { PgPool } from './pg-client.js'

interface PgModule {
  Pool: new (options: {
    connectionString: string
    max?: number
  }) => PgPool & {
    end(): Promise<void>
    on(event: 'error', listener: (error: Error) => void): unknown
  }
}

/**
 * Opens a pg pool for a `postgres://user:pass@host:port/db?strategy=advisory&max=10` URL and a backend on
 * it that owns the pool (its `close()` ends the pool). For `backendFromUrl`.
 *
 * @example
 * const backend = await openPostgresBackend('postgres://postgres@127.0.0.1:5432/test')
 */
export async function openPostgresBackend(
  url: string,
  make: (options: { pool: PgPool; strategy: string | undefined }) => Backend,
): Promise<Backend> {
  const parsed = new URL(url)
  const strategy = parsed.searchParams.get('strategy') ?? undefined
  const max = Number(parsed.searchParams.get('max') ?? 10)
  parsed.searchParams.delete('strategy')
  parsed.searchParams.delete('max')
  const pg = requirePeer<PgModule>('pg', 'postgres', 'pg package (8.x): npm install pg')
  const pool = new pg.Pool({ connectionString: parsed.toString(), max })
  // An idle client dropped by the server is reported here; the pool replaces it on the next connect.
  pool.on('error', () => undefined)
  const backend = make({ pool, strategy })
  const close = backend.close.bind(backend)
  return Object.assign(backend, {
    close: async () => {
      await close()
      await pool.end()
    },
  })
}
