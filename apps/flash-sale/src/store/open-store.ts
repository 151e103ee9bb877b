import { sqliteStore } from './sqlite-store.js'
import type { SaleStore } from './types.js'

/**
 * Opens a store from a URL: `sqlite:./flash-sale.db` (the default), `postgres://user@host:5432/db` or
 * `mysql://user@host:3306/db` (MariaDB too; `mariadb://` is accepted). Each is a {@link SaleStore}.
 *
 * @example
 * const store = await openStore(process.env.FLASH_SALE_STORE ?? 'sqlite:./flash-sale.db')
 */
export async function openStore(url: string): Promise<SaleStore> {
  const colon = url.indexOf(':')
  const scheme = colon > 0 ? url.slice(0, colon).toLowerCase() : ''
  if (scheme === 'sqlite') {
    const rest = url.slice(colon + 1)
    const path = rest.startsWith('//') ? rest.slice(2) : rest
    if (path.length === 0) throw new RangeError(`flash-sale: a sqlite store URL needs a path, received ${url}`)
    return sqliteStore(path)
  }
  if (scheme === 'postgres' || scheme === 'postgresql') {
    // Loaded only when asked for: the embedded default needs no database client.
    const { postgresStore } = await import('./postgres-store.js')
    return postgresStore(url)
  }
  if (scheme === 'mysql' || scheme === 'mariadb') {
    const { mysqlStore } = await import('./mysql-store.js')
    return mysqlStore(scheme === 'mariadb' ? `mysql${url.slice(colon)}` : url)
  }
  throw new RangeError(
    `flash-sale: unsupported store URL ${JSON.stringify(url)}; expected sqlite:./file.db, postgres://user@host:port/db or mysql://user@host:port/db`,
  )
}
