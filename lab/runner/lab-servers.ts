import { join } from 'node:path'
import { type LazyMount, mountLazyFs } from './lazy-fs.js'
import { type PrivateRedis, startPrivateRedis } from './redis-server.js'
import { type PrivateSqlServer, startPrivateMariadb, startPrivatePostgres } from './sql-servers.js'

/**
 * The servers the lab starts for itself, on private ports (never the shared servers'): each is started on first
 * use and kept for the rest of the lab run, so the runs that need it share one instance; stopLabServers ends them.
 */

/** The private MariaDB and PostgreSQL servers' ports, for the runs that freeze or kill the server. */
const LAB_MARIADB_PORT = Number(process.env.LAB_MARIADB_PORT ?? 26306)
const LAB_POSTGRES_PORT = Number(process.env.LAB_POSTGRES_PORT ?? 26432)
/** The private redis-server's port (never the shared 6379). */
export const LAB_REDIS_PORT = Number(process.env.LAB_REDIS_PORT ?? 26379)
/** The port of the lab's own PostgreSQL (the clock scenarios'; never the shared 5432), beside the lab's Redis ports. */
export const LAB_PG_PORT = Number(process.env.LAB_PG_PORT ?? LAB_REDIS_PORT + 60)
/** The port of the lab's own MariaDB (the clock scenarios'; never the shared 3306). */
export const LAB_MYSQL_PORT = Number(process.env.LAB_MYSQL_PORT ?? LAB_REDIS_PORT + 70)
/** The ports of the lab's MariaDB and PostgreSQL on a lazy disk (T13, power loss), beside the lab's Redis ports. */
const LAZY_MARIADB_PORT = LAB_REDIS_PORT + 80
const LAZY_POSTGRES_PORT = LAB_REDIS_PORT + 90
/** The lab's standalone ZooKeeper and single etcd on a lazy disk (T13); etcd's peer port is the next one. */
export const LAZY_ZK_PORT = LAB_REDIS_PORT + 40
export const LAZY_ETCD_PORT = LAB_REDIS_PORT + 50

/**
 * Starts the server under `key` of `started` once, however many runs ask for it at the same time (the smoke runs
 * three at a time): the map holds the start's promise, and forgets a start that failed so that a later run tries
 * again.
 */
function startOnce<K, S>(started: Map<K, Promise<S>>, key: K, start: () => Promise<S>): Promise<S> {
  let server = started.get(key)
  if (server === undefined) {
    server = start()
    started.set(key, server)
    server.catch(() => {
      if (started.get(key) === server) started.delete(key)
    })
  }
  return server
}

/** The started servers of `started`, those whose start failed left out. */
async function startedOf<S>(started: Map<unknown, Promise<S>>): Promise<S[]> {
  const all = await Promise.allSettled(started.values())
  started.clear()
  return all.flatMap((r) => (r.status === 'fulfilled' ? [r.value] : []))
}

/** A Redis target's durability: no persistence, or an AOF fsynced on every write or once a second. */
export type Persistence = 'none' | 'always' | 'everysec'
const redisServers = new Map<number, Promise<PrivateRedis>>()
const PORT_OFFSET: Record<Persistence, number> = { none: 0, always: 1, everysec: 2 }
/** The RedLock nodes: five independent redis-servers without persistence (the RedLock documentation's setup). */
const REDLOCK_PORTS = [10, 11, 12, 13, 14].map((offset) => LAB_REDIS_PORT + offset)

/** One of the lab's own redis-servers on `port`, started on first use in lab/.data. */
function privateRedis(dataRoot: string, port: number, persistence: Persistence): Promise<PrivateRedis> {
  return startOnce(redisServers, port, () => startPrivateRedis(port, join(dataRoot, `redis-${port}`), persistence))
}

/** The lab's redis-server of this durability (one port per durability). */
export function labRedis(dataRoot: string, persistence: Persistence): Promise<PrivateRedis> {
  return privateRedis(dataRoot, LAB_REDIS_PORT + PORT_OFFSET[persistence], persistence)
}

/** The five RedLock nodes. */
export function redlockNodes(dataRoot: string): Promise<PrivateRedis[]> {
  return Promise.all(REDLOCK_PORTS.map((port) => privateRedis(dataRoot, port, 'none')))
}

const clusters = new Map<string, Promise<{ stop(): Promise<void> }>>()

/** A three-member cluster, started on first use and kept for the rest of the lab run. */
export function cluster<C extends { stop(): Promise<void> }>(name: string, start: () => Promise<C>): Promise<C> {
  return startOnce(clusters, name, start) as Promise<C>
}

const sqlServers = new Map<string, Promise<PrivateSqlServer>>()

/**
 * The lab's own MariaDB or PostgreSQL, started on first use (fresh data) and kept for the rest of the lab run;
 * `lazy`: another instance, with its data dir on lazy_fs.py (T13), whose restarts cut the power of its disk.
 */
export async function privateSql(
  engine: 'mariadb' | 'postgres',
  dataRoot: string,
  lazy = false,
): Promise<PrivateSqlServer> {
  const name = lazy ? `${engine}-lazy` : engine
  return startOnce(sqlServers, name, () => {
    const port =
      engine === 'mariadb'
        ? lazy
          ? LAZY_MARIADB_PORT
          : LAB_MARIADB_PORT
        : lazy
          ? LAZY_POSTGRES_PORT
          : LAB_POSTGRES_PORT
    const dir = join(dataRoot, `${name}-${port}`)
    return engine === 'mariadb' ? startPrivateMariadb(port, dir, lazy) : startPrivatePostgres(port, dir, lazy)
  })
}

const lazyMounts: LazyMount[] = []

/**
 * T13: a redis-server with its data dir on a lazy filesystem (lazy_fs.py), on its own port; its restart cuts the
 * power between the kill and the new start, so the AOF keeps only what Redis fsynced.
 */
export function powerLossRedis(dataRoot: string, persistence: Persistence): Promise<PrivateRedis> {
  const port = LAB_REDIS_PORT + 5 + PORT_OFFSET[persistence]
  return startOnce(redisServers, port, async () => {
    const mount = await mountLazyFs(join(dataRoot, `redis-lazy-${port}`))
    lazyMounts.push(mount)
    return startPrivateRedis(port, mount.dir, persistence, { afterKill: () => mount.powerLoss() })
  })
}

/** Stops the servers the lab started. */
export async function stopLabServers(): Promise<void> {
  for (const server of await startedOf(sqlServers)) await server.stop()
  for (const server of await startedOf(redisServers)) await server.stop()
  for (const mount of lazyMounts.splice(0)) await mount.unmount()
  for (const c of await startedOf(clusters)) await c.stop()
}
