import type { Backend } from '../../backend/types.js'
import { checkOptions } from '../../core/validate.js'
import { backendLabel, strategyOption } from '../sql/sql-options.js'
import { checkTimeout, DEFAULT_CONNECT_TIMEOUT_MS } from '../sql/sql-pin.js'
import { advisoryKey, PgAdvisoryBackend } from './pg-advisory-backend.js'
import { type PgClient, type PgPool, PgRunner, pgServer } from './pg-client.js'
import {
  POSTGRES_ADD_PERMITS,
  POSTGRES_MIGRATION,
  POSTGRES_MIGRATION_STATEMENTS,
  RELEASE_CHANNEL,
} from './pg-schema.js'
import { channelPayload, PgTableBackend } from './pg-table-backend.js'
import { openPostgresBackend } from './pg-url.js'

export {
  advisoryKey,
  channelPayload,
  PgAdvisoryBackend,
  type PgClient,
  type PgPool,
  PgTableBackend,
  POSTGRES_ADD_PERMITS,
  POSTGRES_MIGRATION,
  POSTGRES_MIGRATION_STATEMENTS,
  RELEASE_CHANNEL,
}

/** How the PostgreSQL backend locks. See {@link postgresBackend}. */
export type PostgresStrategy = 'table' | 'advisory'

/** Options of {@link postgresBackend}. */
export interface PostgresBackendOptions {
  /** A `pg` pool. Never closed by the backend. */
  pool: PgPool
  /** Default `'table'`. */
  strategy?: PostgresStrategy
  /** How long to wait for a free pool client before failing with `BackendUnavailableError`. Default 5 000. */
  connectTimeoutMs?: number
}

const STRATEGIES: readonly PostgresStrategy[] = ['table', 'advisory']

/**
 * Locks in PostgreSQL 12+ through a `pg` pool. Strategies:
 *
 * | strategy | kinds | fencing | lease clock | waiting |
 * | --- | --- | --- | --- | --- |
 * | `'table'` (default) | all | native (per-lock counter) | database | `LISTEN/NOTIFY` (one listening client per backend) |
 * | `'advisory'` | mutex, read, write | none | this process | in-process wake-ups, otherwise polling |
 *
 * The pool is never closed by the backend; `close()` gives back (or destroys) the clients it took.
 *
 * @example
 * import pg from 'pg'
 * const pool = new pg.Pool({ connectionString: 'postgres://postgres@127.0.0.1:5432/test' })
 * const backend = postgresBackend({ pool })
 * const locks = createLocks({ backend })
 * // ...
 * await locks.close(); await backend.close(); await pool.end()
 */
export function postgresBackend(options: PostgresBackendOptions): Backend {
  const o = checkOptions('options', options)
  const strategy = strategyOption('postgresBackend', STRATEGIES, o.strategy)
  const pool = o.pool as Partial<PgPool> | undefined
  if (typeof pool?.connect !== 'function') {
    throw new TypeError('latchkey: postgresBackend needs options.pool, a pg Pool (new pg.Pool(...))')
  }
  const timeout = checkTimeout('connectTimeoutMs', o.connectTimeoutMs, DEFAULT_CONNECT_TIMEOUT_MS)
  const label = backendLabel('postgres', pgServer(pool))
  const runner = new PgRunner(pool as PgPool, timeout, label)
  return strategy === 'advisory' ? new PgAdvisoryBackend(runner) : new PgTableBackend(runner)
}

/**
 * A backend from a `postgres://user:pass@host:port/db` URL (`?strategy=advisory`, `?max=10`): opens its own
 * pg pool, which the backend's `close()` ends. Used by `backendFromUrl`.
 *
 * @example
 * const backend = await postgresBackendFromUrl('postgres://postgres@127.0.0.1:5432/test')
 */
export function postgresBackendFromUrl(url: string): Promise<Backend> {
  return openPostgresBackend(url, postgresBackend)
}
