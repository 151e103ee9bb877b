import { mkdirSync, rmSync } from 'node:fs'
import { join } from 'node:path'
import { backendFromUrl } from 'latchkey'
import type { ScenarioNeeds } from '../scenarios.js'
import { etcdCluster, zookeeperEnsemble } from './clusters.js'
import {
  closeZkSession,
  killMariadbSessions,
  killRedisClients,
  revokeHolderLease,
  type SessionInfo,
  terminatePostgresBackends,
} from './end-session.js'
import {
  clockMariadb,
  clockPostgres,
  clockRedis,
  clockRedlock,
  clockSqlite,
  replicatedRedis,
  type Setup,
} from './fault-deployments.js'
import { type LazyMount, mountLazyFs } from './lazy-fs.js'
import { type CutWhich, type NetnsCluster, netnsEtcd, netnsZookeeper } from './netns-clusters.js'
import { startLazyEtcd, startLazyZookeeper } from './power-loss-servers.js'
import { type PrivateRedis, startPrivateRedis } from './redis-server.js'
import { type PrivateSqlServer, startPrivateMariadb, startPrivatePostgres } from './sql-servers.js'

/** The faults a prepared target lets the nemesis inject; each is there only where the deployment can do it. */
export interface FaultHooks {
  /** For a server the lab owns: kill it and start it again (server-kill scenarios). */
  restartServer?: (downMs: number) => Promise<void>
  /** For a server the lab owns: freeze it for `ms` (server-pause scenarios). */
  pauseServer?: (ms: number) => Promise<void>
  /** Whether client process `pid` talks to a follower of the lock cluster (cluster-partition scenarios). */
  onFollower?: (pid: number) => Promise<boolean>
  /** Cuts a member of the lock cluster off from the others for `ms` (cluster-partition scenarios). */
  partitionCluster?: (which: CutWhich, pid: number, ms: number) => Promise<string>
  /** The server ends client process `pid`'s lock session (session-kill scenarios); says what it did. */
  endSession?: (pid: number, session: SessionInfo | undefined) => Promise<string>
  /** For a server on a fake clock: step its wall clock by `ms` (server-clock scenarios). */
  jumpServerClock?: (ms: number) => void
  /** Added to every client's environment (SQLite on a fake clock: the clients' clock is the lock's). */
  clientEnv?: Record<string, string>
  /** For a replicated Redis: kill the primary and promote its replica (failover scenarios). */
  failover?: () => Promise<void>
}

/** Where a lab client's lock lives: a URL its strategy opens, how to remove what the run left there, and its fault hooks. */
export interface Prepared extends FaultHooks {
  url: string
  cleanup(): Promise<void>
}

/** A backend the lab can run against. `shared` ones are the machine's shared servers (only our clients pause). */
export interface Target {
  name: string
  shared: boolean
  /** The lab can kill, restart and freeze the server (its own, or a private instance it starts for the purpose). */
  restartable: boolean
  /** The server can end one client's lock session (T8). */
  endsSessions: boolean
  /** A cluster whose members the lab can partition from each other (T9, in lab/netns.sh's namespaces). */
  partitionable?: boolean
  /** A durable server whose disk the lab can make lose its un-fsynced writes (T13, lazy_fs.py). */
  losesPower?: boolean
  /** Clients reach the lock service over TCP (a network fault can cut them off); false for an embedded file. */
  networked: boolean
  /**
   * The backend hands out fencing tokens. RedLock does not (no sound token exists across independent masters),
   * nor do the session-held locks (PostgreSQL advisory, MariaDB GET_LOCK): the lab runs them with fencing off
   * only, since a fence that compares tokens that are all 0 admits everything and would be no fence at all.
   */
  fenced: boolean
  /**
   * `needs`: what the run's scenario needs. `server`: it faults the server itself, so a shared server is replaced
   * by a private instance; `partition`: the cluster runs in network namespaces.
   */
  prepare(namespace: string, runDataDir: string, needs?: ScenarioNeeds): Promise<Prepared>
  /** The deployment a clock or failover scenario needs, where this target has it. */
  prepareWith?(setup: Setup, namespace: string, runDataDir: string): Promise<Prepared>
}

const PG = process.env.LAB_POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/test'
const MYSQL = process.env.LAB_MYSQL_URL ?? 'mysql://root@127.0.0.1:3306/test'
const ZK = process.env.LAB_ZK_HOSTS ?? '127.0.0.1:2181'
const ETCD = process.env.LAB_ETCD_HOSTS ?? '127.0.0.1:2379'
/** The private MariaDB and PostgreSQL servers' ports, for the runs that freeze or kill the server. */
const LAB_MARIADB_PORT = Number(process.env.LAB_MARIADB_PORT ?? 26306)
const LAB_POSTGRES_PORT = Number(process.env.LAB_POSTGRES_PORT ?? 26432)
/** The private redis-server's port (never the shared 6379). */
export const LAB_REDIS_PORT = Number(process.env.LAB_REDIS_PORT ?? 26379)
/** The port of the lab's own PostgreSQL (the clock scenarios'; never the shared 5432), beside the lab's Redis ports. */
const LAB_PG_PORT = Number(process.env.LAB_PG_PORT ?? LAB_REDIS_PORT + 60)
/** The port of the lab's own MariaDB (the clock scenarios'; never the shared 3306). */
const LAB_MYSQL_PORT = Number(process.env.LAB_MYSQL_PORT ?? LAB_REDIS_PORT + 70)
/** The ports of the lab's MariaDB and PostgreSQL on a lazy disk (T13, power loss), beside the lab's Redis ports. */
const LAZY_MARIADB_PORT = LAB_REDIS_PORT + 80
const LAZY_POSTGRES_PORT = LAB_REDIS_PORT + 90
/** The lab's standalone ZooKeeper and single etcd on a lazy disk (T13); etcd's peer port is the next one. */
const LAZY_ZK_PORT = LAB_REDIS_PORT + 40
const LAZY_ETCD_PORT = LAB_REDIS_PORT + 50

type Persistence = 'none' | 'always' | 'everysec'
const redisServers = new Map<number, PrivateRedis>()
const PORT_OFFSET: Record<Persistence, number> = { none: 0, always: 1, everysec: 2 }
/** The RedLock nodes: five independent redis-servers without persistence (the RedLock documentation's setup). */
const REDLOCK_PORTS = [10, 11, 12, 13, 14].map((offset) => LAB_REDIS_PORT + offset)
/** How many RedLock nodes a server fault hits: a majority, the least that can break or block the quorum. */
const REDLOCK_MAJORITY = 3

/** One of the lab's own redis-servers on `port`, started on first use in lab/.data. */
async function privateRedis(dataRoot: string, port: number, persistence: Persistence): Promise<PrivateRedis> {
  let server = redisServers.get(port)
  if (server === undefined) {
    server = await startPrivateRedis(port, join(dataRoot, `redis-${port}`), persistence)
    redisServers.set(port, server)
  }
  return server
}

const clusters = new Map<string, { stop(): Promise<void> }>()

/** A three-member cluster, started on first use and kept for the rest of the lab run. */
async function cluster<C extends { stop(): Promise<void> }>(name: string, start: () => Promise<C>): Promise<C> {
  let found = clusters.get(name) as C | undefined
  if (found === undefined) {
    found = await start()
    clusters.set(name, found)
  }
  return found
}

/** A run on a cluster in network namespaces (T9): its URL, its cleanup, and the partition hook. */
function netnsPrepared(namespace: string, c: NetnsCluster): Prepared {
  const hosts = c.url.replace(/^\w+:\/\//, '')
  return c.url.startsWith('zookeeper')
    ? {
        url: `${c.url}/${namespace}?sessionTimeoutMs=4000`,
        cleanup: () => removeZkTree(`/${namespace}`, hosts),
        partitionCluster: (which, pid, ms) => c.partition(which, pid, ms),
        onFollower: (pid) => c.onFollower(pid),
      }
    : {
        url: `${c.url}?prefix=${namespace}`,
        cleanup: () => deleteEtcdPrefix(namespace, hosts),
        partitionCluster: (which, pid, ms) => c.partition(which, pid, ms),
        onFollower: (pid) => c.onFollower(pid),
      }
}

const sqlServers = new Map<string, PrivateSqlServer>()

/**
 * The lab's own MariaDB or PostgreSQL, started on first use (fresh data) and kept for the rest of the lab run;
 * `lazy`: another instance, with its data dir on lazy_fs.py (T13), whose restarts cut the power of its disk.
 */
async function privateSql(engine: 'mariadb' | 'postgres', dataRoot: string, lazy = false): Promise<PrivateSqlServer> {
  const name = lazy ? `${engine}-lazy` : engine
  let server = sqlServers.get(name)
  if (server === undefined) {
    const port =
      engine === 'mariadb'
        ? lazy
          ? LAZY_MARIADB_PORT
          : LAB_MARIADB_PORT
        : lazy
          ? LAZY_POSTGRES_PORT
          : LAB_POSTGRES_PORT
    const dir = join(dataRoot, `${name}-${port}`)
    server =
      engine === 'mariadb' ? await startPrivateMariadb(port, dir, lazy) : await startPrivatePostgres(port, dir, lazy)
    sqlServers.set(name, server)
  }
  return server
}

/** Stops the servers the lab started. */
export async function stopLabServers(): Promise<void> {
  for (const server of sqlServers.values()) await server.stop()
  sqlServers.clear()
  for (const server of redisServers.values()) await server.stop()
  redisServers.clear()
  for (const mount of lazyMounts.splice(0)) await mount.unmount()
  for (const c of clusters.values()) await c.stop()
  clusters.clear()
}

const lazyMounts: LazyMount[] = []

/**
 * T13: a redis-server with its data dir on a lazy filesystem (lazy_fs.py), on its own port; its restart cuts the
 * power between the kill and the new start, so the AOF keeps only what Redis fsynced.
 */
async function powerLossRedis(dataRoot: string, persistence: Persistence): Promise<PrivateRedis> {
  const port = LAB_REDIS_PORT + 5 + PORT_OFFSET[persistence]
  let server = redisServers.get(port)
  if (server === undefined) {
    const mount = await mountLazyFs(join(dataRoot, `redis-lazy-${port}`))
    lazyMounts.push(mount)
    server = await startPrivateRedis(port, mount.dir, persistence, { afterKill: () => mount.powerLoss() })
    redisServers.set(port, server)
  }
  return server
}

const redisTarget = (name: string, persistence: Persistence): Target => ({
  name,
  shared: false,
  restartable: true,
  endsSessions: persistence === 'none',
  losesPower: persistence !== 'none',
  networked: true,
  fenced: true,
  prepare: async (_namespace, dataRoot, needs) => {
    const server =
      needs === 'power-loss'
        ? await powerLossRedis(dataRoot, persistence)
        : await privateRedis(dataRoot, LAB_REDIS_PORT + PORT_OFFSET[persistence], persistence)
    return {
      url: server.url,
      cleanup: async () => {},
      restartServer: (downMs) => server.restart(downMs),
      pauseServer: (ms) => server.pause(ms),
      endSession: (pid) => killRedisClients(server.url, pid),
    }
  },
  ...(persistence === 'none'
    ? {
        prepareWith: async (setup, namespace, dataRoot) =>
          setup.kind === 'replica'
            ? replicatedRedis(LAB_REDIS_PORT, dataRoot)
            : clockRedis(LAB_REDIS_PORT, dataRoot, namespace, setup),
      }
    : {}),
})

/** RedLock over five private nodes; server faults strike a majority of them at once. */
const redlockTarget: Target = {
  name: 'redlock',
  shared: false,
  restartable: true,
  endsSessions: false,
  networked: true,
  fenced: false,
  prepare: async (_namespace, dataRoot) => {
    const nodes = await Promise.all(REDLOCK_PORTS.map((port) => privateRedis(dataRoot, port, 'none')))
    const hit = nodes.slice(0, REDLOCK_MAJORITY)
    return {
      url: `redlock://${nodes.map((n) => `127.0.0.1:${n.port}`).join(',')}`,
      cleanup: async () => {},
      restartServer: async (downMs) => void (await Promise.all(hit.map((n) => n.restart(downMs)))),
      pauseServer: async (ms) => void (await Promise.all(hit.map((n) => n.pause(ms)))),
    }
  },
  prepareWith: async (setup, namespace, dataRoot) => {
    if (setup.kind !== 'server-clock') throw new TypeError('lab: RedLock has no replicated deployment')
    return clockRedlock(LAB_REDIS_PORT, dataRoot, namespace, setup)
  },
}

/** Deletes the rows of one lock key from latchkey's SQL tables (they are shared with other users of the server). */
async function deleteSqlRows(url: string, key: string, tables: string[]): Promise<void> {
  if (url.startsWith('postgres')) {
    const { default: pg } = await import('pg')
    const client = new pg.Client({ connectionString: url.split('?')[0] })
    await client.connect()
    for (const table of tables) {
      await client.query(`DELETE FROM ${table} WHERE lock_key = convert_to($1, 'UTF8')`, [key]).catch(() => {})
    }
    await client.end()
  } else {
    const mysql = await import('mysql2/promise')
    const connection = await mysql.createConnection(url.split('?')[0]!)
    for (const table of tables) await connection.query(`DELETE FROM ${table} WHERE lock_key = ?`, [key]).catch(() => {})
    await connection.end()
  }
}

/**
 * A SQL strategy on the shared server, or, for a run that freezes or kills the server, on the lab's private
 * instance of the same engine (default durability), which nobody else uses; for a power loss (T13), on one whose
 * data dir is on lazy_fs.py.
 */
const sqlTarget = (name: string, shared: string, strategy: string, fenced: boolean): Target => ({
  name,
  shared: true,
  restartable: true,
  endsSessions: true,
  losesPower: true,
  networked: true,
  fenced,
  prepare: async (namespace, dataRoot, needs) => {
    const engine = shared.startsWith('postgres') ? 'postgres' : 'mariadb'
    const own =
      needs === 'server' || needs === 'power-loss'
        ? await privateSql(engine, dataRoot, needs === 'power-loss')
        : undefined
    const base = own?.url ?? shared
    const end = engine === 'postgres' ? terminatePostgresBackends : killMariadbSessions
    return {
      url: `${base}?strategy=${strategy}`,
      cleanup: () =>
        deleteSqlRows(base, `${namespace}:resource`, ['latchkey_holders', 'latchkey_waiters', 'latchkey_locks']),
      endSession: (pid) => end(base, pid),
      ...(own === undefined
        ? {}
        : { restartServer: (downMs: number) => own.restart(downMs), pauseServer: (ms: number) => own.pause(ms) }),
    }
  },
  // The shared server's clock must not move: a clock scenario gets a server of its own.
  prepareWith: async (setup, namespace, dataRoot) => {
    if (setup.kind !== 'server-clock') throw new TypeError(`lab: ${name} has no replicated deployment here`)
    return shared === PG
      ? clockPostgres(LAB_PG_PORT, dataRoot, namespace, setup, strategy)
      : clockMariadb(LAB_MYSQL_PORT, dataRoot, namespace, setup, strategy)
  },
})

/** Every latchkey backend the lab knows, by name. */
export const TARGETS: Record<string, Target> = {
  redis: redisTarget('redis', 'none'),
  'redis-aof-always': redisTarget('redis-aof-always', 'always'),
  'redis-aof-everysec': redisTarget('redis-aof-everysec', 'everysec'),
  redlock: redlockTarget,
  sqlite: {
    name: 'sqlite',
    shared: false,
    restartable: false,
    endsSessions: false,
    networked: false,
    fenced: true,
    prepare: async (namespace, dataRoot) => {
      mkdirSync(dataRoot, { recursive: true })
      const file = join(dataRoot, `${namespace}.db`)
      const cleanup = async (): Promise<void> => {
        // The database, its WAL files and the directory latchkey watches for releases.
        for (const suffix of ['', '-wal', '-shm', '-latchkey'])
          rmSync(`${file}${suffix}`, { recursive: true, force: true })
      }
      return { url: `sqlite:${file}`, cleanup }
    },
    prepareWith: async (setup, namespace, dataRoot) => {
      if (setup.kind !== 'server-clock') throw new TypeError('lab: SQLite has no replicated deployment')
      const plain = await TARGETS.sqlite!.prepare(namespace, dataRoot)
      return { ...plain, ...clockSqlite(dataRoot, namespace, setup) }
    },
  },
  'postgres-table': sqlTarget('postgres-table', PG, 'table', true),
  'postgres-advisory': sqlTarget('postgres-advisory', PG, 'advisory', false),
  'mariadb-table': sqlTarget('mariadb-table', MYSQL, 'table', true),
  'mariadb-get_lock': sqlTarget('mariadb-get_lock', MYSQL, 'get_lock', false),
  zookeeper: {
    name: 'zookeeper',
    shared: true,
    restartable: false,
    endsSessions: true,
    losesPower: true,
    networked: true,
    fenced: true,
    prepare: async (namespace, dataRoot, needs) => {
      if (needs === 'power-loss') {
        const server = await cluster('zookeeper-lazy', () =>
          startLazyZookeeper(LAZY_ZK_PORT, join(dataRoot, `zookeeper-lazy-${LAZY_ZK_PORT}`)),
        )
        return {
          url: `${server.url}/${namespace}?sessionTimeoutMs=4000`,
          cleanup: () => removeZkTree(`/${namespace}`, `127.0.0.1:${LAZY_ZK_PORT}`),
          restartServer: (downMs) => server.restart(downMs),
          pauseServer: (ms) => server.pause(ms),
        }
      }
      return {
        url: `zookeeper://${ZK}/${namespace}?sessionTimeoutMs=4000`,
        cleanup: () => removeZkTree(`/${namespace}`),
        endSession: (_pid, session) => closeZkSession(ZK, session),
      }
    },
  },
  'zookeeper-3': {
    name: 'zookeeper-3',
    shared: false,
    restartable: true,
    endsSessions: false,
    partitionable: true,
    networked: true,
    fenced: true,
    prepare: async (namespace, dataRoot, needs) => {
      if (needs === 'partition')
        return netnsPrepared(namespace, await cluster('zookeeper-netns', () => netnsZookeeper(dataRoot)))
      const ensemble = await cluster('zookeeper-3', zookeeperEnsemble)
      const hosts = ensemble.url.replace('zookeeper://', '')
      return {
        url: `${ensemble.url}/${namespace}?sessionTimeoutMs=4000`,
        cleanup: () => removeZkTree(`/${namespace}`, hosts),
        restartServer: (downMs) => ensemble.killLeader(downMs),
        pauseServer: (ms) => ensemble.pauseLeader(ms),
      }
    },
  },
  'etcd-3': {
    name: 'etcd-3',
    shared: false,
    restartable: true,
    endsSessions: false,
    partitionable: true,
    networked: true,
    fenced: true,
    prepare: async (namespace, dataRoot, needs) => {
      if (needs === 'partition') return netnsPrepared(namespace, await cluster('etcd-netns', () => netnsEtcd(dataRoot)))
      const members = await cluster('etcd-3', () => etcdCluster(dataRoot))
      return {
        url: `${members.url}?prefix=${namespace}`,
        cleanup: () => deleteEtcdPrefix(namespace, members.url.replace('etcd://', '')),
        restartServer: (downMs) => members.killLeader(downMs),
        pauseServer: (ms) => members.pauseLeader(ms),
      }
    },
  },
  etcd: {
    name: 'etcd',
    shared: true,
    restartable: false,
    endsSessions: true,
    networked: true,
    fenced: true,
    losesPower: true,
    prepare: async (namespace, dataRoot, needs) => {
      if (needs === 'power-loss') {
        const server = await cluster('etcd-lazy', () =>
          startLazyEtcd(LAZY_ETCD_PORT, LAZY_ETCD_PORT + 1, join(dataRoot, `etcd-lazy-${LAZY_ETCD_PORT}`)),
        )
        return {
          url: `${server.url}?prefix=${namespace}`,
          cleanup: () => deleteEtcdPrefix(namespace, `127.0.0.1:${LAZY_ETCD_PORT}`),
          restartServer: (downMs) => server.restart(downMs),
          pauseServer: (ms) => server.pause(ms),
        }
      }
      const url = `etcd://${ETCD}?prefix=${namespace}`
      return {
        url,
        cleanup: () => deleteEtcdPrefix(namespace),
        endSession: () => revokeHolderLease(ETCD, namespace),
      }
    },
  },
}

/** Removes a ZooKeeper subtree the run created (the chroot of its lock). */
export async function removeZkTree(path: string, hosts = ZK): Promise<void> {
  const { default: zookeeper } = await import('node-zookeeper-client')
  const client = zookeeper.createClient(hosts)
  await new Promise<void>((resolve) => {
    client.once('connected', () => resolve())
    client.connect()
  })
  // removeRecursive exists in the client (1.1.3) but not in its type definitions.
  const tree = client as unknown as { removeRecursive(path: string, version: number, cb: () => void): void }
  await new Promise<void>((resolve) => tree.removeRecursive(path, -1, () => resolve()))
  client.close()
}

async function deleteEtcdPrefix(prefix: string, hosts = ETCD): Promise<void> {
  const { Etcd3 } = await import('etcd3')
  const client = new Etcd3({ hosts: hosts.split(',').map((h) => `http://${h}`) })
  await client.delete().prefix(prefix)
  client.close()
}

/** Checks a target's URL opens (so a missing server is reported before forking five clients at it). */
export async function probe(url: string): Promise<void> {
  const backend = await backendFromUrl(url)
  await backend.close()
}
