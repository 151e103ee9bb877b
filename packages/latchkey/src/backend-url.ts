import type { Backend } from './backend/types.js'

/**
 * Opens a backend from a URL: `memory:`, `sqlite:./file.db` (`sqlite::memory:` for a private in-memory
 * database), `mysql://user:pass@host:port/db?strategy=table|get_lock|for_update`,
 * `postgres://user@host:port/db?strategy=table|advisory`, `zookeeper://h1:p1,h2:p2/chroot?sessionTimeoutMs=…`,
 * `etcd://h1:p1,h2:p2`, `redlock://h1:p1,h2:p2,h3:p3`. The backend owns the clients it opens: call
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
    case 'redis':
    case 'rediss': {
      const { openRedisBackend } = await import('./backends/redis/index.js')
      return openRedisBackend(url)
    }
    case 'redlock': {
      // redlock://h1:p1,h2:p2,h3:p3?quorum=&driftFactor=&nodeTimeoutMs= (opens and owns one ioredis client per node)
      const { openRedlockBackend } = await import('./backends/redlock/index.js')
      return openRedlockBackend(url)
    }
    case 'zookeeper': {
      // zookeeper://h1:p1,h2:p2/chroot?sessionTimeoutMs=10000 (URL() cannot parse a host list)
      const [where = '', query = ''] = rest.replace(/^\/\//, '').split('?')
      if (where.length === 0) {
        throw new RangeError(
          `latchkey: a zookeeper URL needs hosts (zookeeper://h1:2181,h2:2181), received ${JSON.stringify(url)}`,
        )
      }
      const timeout = new URLSearchParams(query).get('sessionTimeoutMs')
      const { zookeeperBackend } = await import('./backends/zookeeper/index.js')
      return zookeeperBackend({
        connectString: where,
        ...(timeout === null ? {} : { sessionTimeoutMs: Number(timeout) }),
      })
    }
    case 'etcd': {
      // etcd://h1:p1,h2:p2 -> one http endpoint per host
      const hosts = rest.replace(/^\/\//, '').split(/[/?]/)[0] ?? ''
      if (hosts.length === 0)
        throw new RangeError(`latchkey: an etcd URL needs hosts (etcd://h1:2379), received ${JSON.stringify(url)}`)
      const { etcdBackend } = await import('./backends/etcd/index.js')
      return etcdBackend({ hosts: hosts.split(',').map((h) => `http://${h}`) })
    }
    default:
      throw new RangeError(
        `latchkey: unknown backend URL scheme in ${JSON.stringify(url)}; expected memory:, sqlite:, redis:, redlock:, zookeeper:, mysql:, postgres: or etcd:`,
      )
  }
}
