import type { Backend } from './backend/types.js'
import { UnsupportedError } from './errors.js'

/** Backends this build can open from a URL; the others are named so the error can say so. */
const PLANNED = ['redis', 'redlock', 'zookeeper', 'etcd']

/**
 * Opens a backend from a URL: `memory:`, `sqlite:./file.db` (`sqlite::memory:` for a private in-memory
 * database), `mysql://user:pass@host:port/db?strategy=table|get_lock|for_update`,
 * `postgres://user@host:port/db?strategy=table|advisory`. The backend owns the clients it opens: call
 * `backend.close()` when done.
 *
 * @example
 * const backend = await backendFromUrl(process.env.LOCKS_URL ?? 'sqlite:./locks.db')
 */
export async function backendFromUrl(url: string): Promise<Backend> {
  if (typeof url !== 'string') throw new TypeError(`latchkey: url must be a string, received ${typeof url}`)
  const colon = url.indexOf(':')
  const scheme = colon > 0 ? url.slice(0, colon).toLowerCase() : ''
  const rest = url.slice(colon + 1)
  switch (scheme) {
    case 'memory': {
      const { memoryBackend } = await import('./backends/memory/index.js')
      return memoryBackend()
    }
    case 'sqlite': {
      const path = rest.startsWith('//') ? rest.slice(2) : rest
      if (path.length === 0)
        throw new RangeError(
          `latchkey: a sqlite URL needs a file path (sqlite:./locks.db), received ${JSON.stringify(url)}`,
        )
      const { sqliteBackend } = await import('./backends/sqlite/index.js')
      return sqliteBackend({ path })
    }
    case 'mysql': {
      const { mysqlBackendFromUrl } = await import('./backends/mysql/index.js')
      return mysqlBackendFromUrl(url)
    }
    case 'postgres':
    case 'postgresql': {
      const { postgresBackendFromUrl } = await import('./backends/postgres/index.js')
      return postgresBackendFromUrl(url)
    }
    default:
      if (PLANNED.includes(scheme)) {
        throw new UnsupportedError(
          `The ${scheme} backend is not part of this latchkey build yet; use memory: or sqlite:`,
        )
      }
      throw new RangeError(
        `latchkey: unknown backend URL scheme in ${JSON.stringify(url)}; expected memory: or sqlite:`,
      )
  }
}
