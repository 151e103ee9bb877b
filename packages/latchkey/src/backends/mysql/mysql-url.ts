import { requirePeer } from '../../backend/optional-peer.js'
import type { Backend } from '../../backend/types.js'
import type { MysqlPool } from './mysql-client.js'

interface Mysql2Promise {
  createPool(options: { uri: string; connectionLimit?: number }): MysqlPool & { end(): Promise<void> }
}

/**
 * Opens a mysql2 pool for a `mysql://user:pass@host:port/db?strategy=get_lock&connectionLimit=10` URL
 * and a backend on it that owns the pool (its `close()` ends the pool). For `backendFromUrl`.
 *
 * @example
 * const backend = await openMysqlBackend('mysql://root@127.0.0.1:3306/test')
 */
export async function openMysqlBackend(
  url: string,
  make: (options: { pool: MysqlPool; strategy: string | undefined }) => Backend,
): Promise<Backend> {
  const parsed = new URL(url)
  const strategy = parsed.searchParams.get('strategy') ?? undefined
  const limit = Number(parsed.searchParams.get('connectionLimit') ?? 10)
  parsed.searchParams.delete('strategy')
  parsed.searchParams.delete('connectionLimit')
  const mysql = requirePeer<Mysql2Promise>('mysql2/promise', 'mysql', 'mysql2 package (3.x): npm install mysql2')
  const pool = mysql.createPool({ uri: parsed.toString(), connectionLimit: limit })
  const backend = make({ pool, strategy })
  const close = backend.close.bind(backend)
  return Object.assign(backend, {
    close: async () => {
      await close()
      await pool.end()
    },
  })
}
