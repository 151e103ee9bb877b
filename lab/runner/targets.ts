import { mkdirSync, rmSync } from 'node:fs'
import { join } from 'node:path'
import { backendFromUrl, redactUrl } from 'latchkey'
import { etcdClusterTarget, zookeeperEnsembleTarget } from './cluster-targets.js'
import {
  closeZkSession,
  killMariadbSessions,
  killRedisClients,
  revokeHolderLease,
  terminatePostgresBackends,
} from './end-session.js'
import {
  clockMariadb,
  clockPostgres,
  clockRedis,
  clockRedlock,
  clockSqlite,
  replicatedRedis,
} from './fault-deployments.js'
import {
  cluster,
  LAB_MYSQL_PORT,
  LAB_PG_PORT,
  LAB_REDIS_PORT,
  LAZY_ETCD_PORT,
  LAZY_ZK_PORT,
  labRedis,
  type Persistence,
  powerLossRedis,
  privateSql,
  redlockNodes,
} from './lab-servers.js'
import { deleteEtcdPrefix, deleteSqlRows, removeZkTree } from './lock-cleanup.js'
import { startLazyEtcd, startLazyZookeeper } from './power-loss-servers.js'
import { SHARED_ETCD_HOSTS, SHARED_MYSQL_URL, SHARED_POSTGRES_URL, SHARED_ZK_HOSTS } from './shared-servers.js'
import type { Target } from './target.js'
import { within } from './within.js'

/** How many RedLock nodes a server fault hits: a majority, the least that can break or block the quorum. */
const REDLOCK_MAJORITY = 3

/** The lab's own redis-server of one durability (AOF-backed ones on a lazy disk for a power loss, T13). */
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
      needs === 'power-loss' ? await powerLossRedis(dataRoot, persistence) : await labRedis(dataRoot, persistence)
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
    const nodes = await redlockNodes(dataRoot)
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
    return shared === SHARED_POSTGRES_URL
      ? clockPostgres(LAB_PG_PORT, dataRoot, namespace, setup, strategy)
      : clockMariadb(LAB_MYSQL_PORT, dataRoot, namespace, setup, strategy)
  },
})

/** SQLite: a database file per run in the run's data dir (no server; its clock is the host's). */
const sqliteTarget: Target = {
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
    const plain = await sqliteTarget.prepare(namespace, dataRoot)
    return { ...plain, ...clockSqlite(dataRoot, namespace, setup) }
  },
}

/** The shared standalone ZooKeeper, or for a power loss (T13) the lab's own on a lazy disk. */
const zookeeperTarget: Target = {
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
      url: `zookeeper://${SHARED_ZK_HOSTS}/${namespace}?sessionTimeoutMs=4000`,
      cleanup: () => removeZkTree(`/${namespace}`),
      endSession: (_pid, session) => closeZkSession(SHARED_ZK_HOSTS, session),
    }
  },
}

/** The shared single etcd, or for a power loss (T13) the lab's own on a lazy disk. */
const etcdTarget: Target = {
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
    const url = `etcd://${SHARED_ETCD_HOSTS}?prefix=${namespace}`
    return {
      url,
      cleanup: () => deleteEtcdPrefix(namespace),
      endSession: () => revokeHolderLease(SHARED_ETCD_HOSTS, namespace),
    }
  },
}

/** Every latchkey backend the lab knows, by name. */
export const TARGETS: Record<string, Target> = {
  redis: redisTarget('redis', 'none'),
  'redis-aof-always': redisTarget('redis-aof-always', 'always'),
  'redis-aof-everysec': redisTarget('redis-aof-everysec', 'everysec'),
  redlock: redlockTarget,
  sqlite: sqliteTarget,
  'postgres-table': sqlTarget('postgres-table', SHARED_POSTGRES_URL, 'table', true),
  'postgres-advisory': sqlTarget('postgres-advisory', SHARED_POSTGRES_URL, 'advisory', false),
  'mariadb-table': sqlTarget('mariadb-table', SHARED_MYSQL_URL, 'table', true),
  'mariadb-get_lock': sqlTarget('mariadb-get_lock', SHARED_MYSQL_URL, 'get_lock', false),
  zookeeper: zookeeperTarget,
  'zookeeper-3': zookeeperEnsembleTarget,
  'etcd-3': etcdClusterTarget,
  etcd: etcdTarget,
}

/** How long the probe waits for a backend's first answer. */
const PROBE_MS = 15_000

/**
 * Checks the backend behind a target's URL answers one read (so a missing server is reported before forking five
 * clients at it). Opening alone proves nothing: the ZooKeeper and etcd backends connect on first use.
 */
export async function probe(url: string): Promise<void> {
  const backend = await backendFromUrl(url)
  try {
    await within(
      `probe of ${redactUrl(url)}`,
      PROBE_MS,
      backend.isLocked({ key: 'lab-probe', kind: 'mutex', permits: 1 }),
    )
  } finally {
    await within(`close of ${redactUrl(url)}`, PROBE_MS, backend.close()).catch(() => {})
  }
}
