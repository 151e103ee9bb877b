import type { Backend } from './backend/types.js'
import { checkQueryKeys, rejectFragment, shownUrl, splitUrl } from './backend/url-parts.js'

const SCHEMES = 'memory:, sqlite:, redis:, rediss:, redlock:, zookeeper:, mysql:, postgres: or etcd:'

/**
 * Opens a backend from a URL: `memory:`, `sqlite:./file.db` (`sqlite::memory:` for a private in-memory
 * database), `redis://[user:pass@]host:port/db?layout=&commandTimeoutMs=`,
 * `mysql://user:pass@host:port/db?strategy=table|get_lock|for_update&connectionLimit=`,
 * `postgres://user@host:port/db?strategy=table|advisory&max=`,
 * `zookeeper://h1:p1,h2:p2/chroot?sessionTimeoutMs=…` (a missing chroot is created), `etcd://h1:p1,h2:p2?prefix=`,
 * `redlock://h1:p1,h2:p2,h3:p3?quorum=`. Every part is checked before any client is built: a bad scheme, host,
 * port (1-65535), path, unknown query option or credentials a backend cannot use throw a `TypeError` /
 * `RangeError` naming the part, with the URL's password hidden. The backend owns the clients it opens: call
 * `backend.close()` when done.
 *
 * @example
 * const backend = await backendFromUrl(process.env.LOCKS_URL ?? 'sqlite:./locks.db')
 */
export async function backendFromUrl(url: string): Promise<Backend> {
  if (typeof url !== 'string') throw new TypeError(`latchkey: url must be a string, received ${typeof url}`)
  const parts = splitUrl(url)
  switch (parts.scheme) {
    case 'memory': {
      if (`${parts.hosts}${parts.path}` !== '' || parts.userinfo !== undefined) {
        throw new RangeError(`latchkey: a memory URL is just "memory:", received ${shownUrl(url)}`)
      }
      rejectFragment(parts, url)
      checkQueryKeys(parts.query, [], 'memory', url)
      const { memoryBackend } = await import('./backends/memory/index.js')
      return memoryBackend()
    }
    case 'sqlite': {
      const rest = url.slice(url.indexOf(':') + 1)
      const path = rest.startsWith('//') ? rest.slice(2) : rest
      if (path.length === 0)
        throw new RangeError(`latchkey: a sqlite URL needs a file path (sqlite:./locks.db), received ${shownUrl(url)}`)
      if (/[?#]/.test(path)) {
        throw new RangeError(
          `latchkey: a sqlite URL takes no options (known options: none), received ${shownUrl(url)}; use sqliteBackend() for options`,
        )
      }
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
    case 'redis':
    case 'rediss': {
      const { openRedisBackend } = await import('./backends/redis/index.js')
      return openRedisBackend(url)
    }
    case 'redlock': {
      const { openRedlockBackend } = await import('./backends/redlock/index.js')
      return openRedlockBackend(url)
    }
    case 'zookeeper': {
      const { zookeeperBackend, parseZookeeperUrl } = await import('./backends/zookeeper/index.js')
      return zookeeperBackend(parseZookeeperUrl(url))
    }
    case 'etcd': {
      const { etcdBackend, parseEtcdUrl } = await import('./backends/etcd/index.js')
      return etcdBackend(parseEtcdUrl(url))
    }
    default:
      throw new RangeError(
        `latchkey: unknown backend URL scheme "${parts.scheme}:" in ${shownUrl(url)}; expected ${SCHEMES}`,
      )
  }
}
