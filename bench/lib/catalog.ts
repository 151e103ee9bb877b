/**
 * Every contender of the report: the Redis peers (on a private redis-server), every latchkey backend, and
 * the floors (raw server costs; the research's wake-one Redis prototype beside the peers), with the servers
 * they need (loopback defaults, overridable by the tests' variables).
 */
import type { ContenderSpec, FloorName } from './contender.js'

/** Where the servers are. */
export interface Servers {
  /** The private redis-server of this run. */
  readonly redis: string
  readonly redlock: readonly string[]
  readonly zk: string
  readonly zkEnsemble: string
  readonly etcd: string
  readonly mysql: string
  readonly postgres: string
  /** A folder for the SQLite lock file. */
  readonly tmpDir: string
}

/** The servers from the environment (the same variables as the tests), given the private Redis and a folder. */
export function serversFromEnv(redis: string, tmpDir: string): Servers {
  const env = process.env
  const ports = (env.LATCHKEY_ZK_ENSEMBLE_PORTS ?? '2291,2292,2293').split(',')
  return {
    redis,
    redlock: (
      env.LATCHKEY_REDLOCK_URLS ?? [6381, 6382, 6383, 6384, 6385].map((p) => `redis://127.0.0.1:${p}`).join(',')
    )
      .split(',')
      .map((u) => u.trim()),
    zk: env.LATCHKEY_ZK_URL ?? '127.0.0.1:2181',
    zkEnsemble: ports.map((p) => `127.0.0.1:${p.trim()}`).join(','),
    etcd: env.LATCHKEY_ETCD_URL ?? 'http://127.0.0.1:2379',
    mysql: env.LATCHKEY_MYSQL_URL ?? 'mysql://root@127.0.0.1:3306/test',
    postgres: env.LATCHKEY_POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/test',
    tmpDir,
  }
}

/** One row of the report. */
export interface ContenderDef {
  readonly id: string
  readonly label: string
  /** Shown in the peers table (Redis libraries), the backends table, or both. */
  readonly tables: readonly ('peers' | 'backends')[]
  /** Can wait for a taken lock (contended scenarios). */
  readonly waits: boolean
  /** Its waiters can live in several OS processes (false: all in one). */
  readonly crossProcess: boolean
  /** The most waiters it is given on one lock (the report says where this scales a scenario down). */
  readonly maxWaiters: number
  /** Redis servers whose INFO commandstats count its server commands. */
  readonly probeUrls: readonly string[]
  /** Only these scenarios (default: every one of the run). */
  readonly scenarios?: readonly string[]
  /** A ZooKeeper connect string: the contender is Apache Curator in a JVM (contender-pools.ts), not a worker. */
  readonly curator?: string
  /** `concurrency`: locks one process may hold at once (sizes SQL pools; default the URL's own). */
  readonly spec: (namespace: string, ttlMs: number, concurrency?: number) => ContenderSpec
}

const WAITER_CAP = Number(process.env.BENCH_MAX_WAITERS ?? 1_000)
const BASELINE_DIST = process.env.BENCH_BASELINE_DIST

function latchkey(
  id: string,
  label: string,
  url: string | ((concurrency?: number) => string),
  o: Partial<ContenderDef> & { pollMs?: number; dist?: string; sessions?: number } = {},
): ContenderDef {
  return {
    id,
    label,
    tables: o.tables ?? ['backends'],
    waits: true,
    crossProcess: o.crossProcess ?? true,
    maxWaiters: Math.min(WAITER_CAP, o.maxWaiters ?? 1_000),
    probeUrls: o.probeUrls ?? [],
    ...(o.scenarios === undefined ? {} : { scenarios: o.scenarios }),
    spec: (namespace, ttlMs, concurrency) => ({
      type: 'latchkey',
      url: typeof url === 'string' ? url : url(concurrency),
      namespace,
      ttlMs,
      ...(o.pollMs === undefined ? {} : { pollMs: o.pollMs }),
      ...(o.dist === undefined ? {} : { dist: o.dist }),
      ...(o.sessions === undefined ? {} : { sessions: o.sessions }),
    }),
  }
}

function peer(id: string, label: string, name: 'raw' | 'redlock4' | 'redlock5' | 'redis-semaphore', url: string) {
  const def: ContenderDef = {
    id,
    label,
    tables: ['peers'],
    waits: name !== 'raw',
    crossProcess: true,
    maxWaiters: WAITER_CAP,
    probeUrls: [url],
    spec: (namespace, ttlMs) => ({ type: 'peer', peer: name, url, namespace, ttlMs }),
  }
  return def
}

/** A floor; by default one that cannot wait, in the backends table. */
function floor(
  id: string,
  label: string,
  name: FloorName,
  url: string,
  o: Partial<Pick<ContenderDef, 'tables' | 'waits' | 'maxWaiters' | 'probeUrls' | 'crossProcess' | 'scenarios'>> & {
    sessions?: number
  } = {},
): ContenderDef {
  return {
    id,
    label,
    tables: o.tables ?? ['backends'],
    waits: o.waits ?? false,
    crossProcess: o.crossProcess ?? true,
    ...(o.scenarios === undefined ? {} : { scenarios: o.scenarios }),
    maxWaiters: Math.min(WAITER_CAP, o.maxWaiters ?? 0),
    probeUrls: o.probeUrls ?? [],
    spec: (namespace, ttlMs) => ({
      type: 'floor',
      floor: name,
      url,
      namespace,
      ttlMs,
      ...(o.sessions === undefined ? {} : { sessions: o.sessions }),
    }),
  }
}

/** Apache Curator 5.4's InterProcessMutex (Debian's jars), in a JVM that spreads waiters over 4 sessions. */
function curator(id: string, label: string, connect: string): ContenderDef {
  return {
    id,
    label,
    tables: ['backends'],
    waits: true,
    crossProcess: true,
    maxWaiters: WAITER_CAP,
    probeUrls: [],
    curator: connect,
    spec: (namespace, ttlMs) => ({ type: 'curator', connect, namespace, ttlMs }),
  }
}

/**
 * Curator's InterProcessMutex recipe on the bare ZooKeeper protocol (lib/zk-recipe-floor.ts), in latchkey's two
 * layouts of the Curator comparison: the uncontended cells and 10 waiters over 4 processes, and 10 waiters in one
 * process over 4 sessions.
 */
function zkFloors(id: string, where: string, connect: string): ContenderDef[] {
  const label = `floor: Curator's recipe on the bare protocol (${where})`
  return [
    floor(id, label, 'zk-recipe', connect, { waits: true, maxWaiters: 10, scenarios: ['c1', 'c50', 'w10'] }),
    floor(`${id}-1p`, `${label}, waiters in one process (4 sessions)`, 'zk-recipe', connect, {
      waits: true,
      maxWaiters: 10,
      crossProcess: false,
      scenarios: ['w10'],
      sessions: 4,
    }),
  ]
}

/** The handoff cells measured again with every waiter in one process (the in-process wake path). */
const ONE_PROCESS = ['w10', 'w100']

/** The polling interval of latchkey's polling configuration (spinning clients commonly sleep 20 ms between tries: docs/background.md#polling-clients). */
export const POLL_MS = 20

/** Every contender, in report order. */
export function catalog(s: Servers): ContenderDef[] {
  // Session strategies pin a pool connection per held lock (for_update keeps one more for its tokens): a
  // cell holding many locks at once in one process gets a pool that large. Table strategies hold no
  // connection between statements and keep the URL default (10): on 2 cores, 60 connections made PostgreSQL
  // `table` at concurrency 50 slower than at 1 (420 vs 915 pairs/s with 10, measured by hand).
  const session = new Set(['get_lock', 'for_update', 'advisory'])
  const poolFor = (strategy: string, name: string, concurrency?: number) =>
    !session.has(strategy) || concurrency === undefined || concurrency <= 5 ? '' : `&${name}=${concurrency + 10}`
  const mysql = (strategy: string) => (c?: number) =>
    `${s.mysql}${s.mysql.includes('?') ? '&' : '?'}strategy=${strategy}${poolFor(strategy, 'connectionLimit', c)}`
  const pg = (strategy: string) => (c?: number) =>
    `${s.postgres}${s.postgres.includes('?') ? '&' : '?'}strategy=${strategy}${poolFor(strategy, 'max', c)}`
  const redlockUrl = `redlock://${s.redlock.map((u) => new URL(u).host).join(',')}`
  return [
    peer('raw', 'raw ioredis SET NX PX + DEL', 'raw', s.redis),
    latchkey('redis', 'latchkey Redis', s.redis, { tables: ['peers', 'backends'], probeUrls: [s.redis] }),
    // BENCH_BASELINE_DIST: the Redis backend of that build beside this one, on the same server.
    ...(BASELINE_DIST === undefined
      ? []
      : [
          latchkey('redis-baseline', 'latchkey Redis, baseline build', s.redis, {
            tables: ['peers'],
            probeUrls: [s.redis],
            dist: BASELINE_DIST,
          }),
        ]),
    latchkey('redis-poll', `latchkey Redis, polling (notifications hidden, ≤ ${POLL_MS} ms)`, s.redis, {
      tables: ['peers', 'backends'],
      probeUrls: [s.redis],
      pollMs: POLL_MS,
    }),
    peer('redlock4', 'redlock 4.2 (default: 10 retries, 200±100 ms)', 'redlock4', s.redis),
    peer('redlock5', 'redlock 5.0-beta (default: 10 retries, 200±100 ms)', 'redlock5', s.redis),
    {
      // The same library on the same five masters as latchkey's RedLock backend: the like-for-like comparison.
      ...peer('redlock5-5', 'redlock 5.0-beta on the 5 RedLock nodes (same defaults)', 'redlock5', s.redlock.join(',')),
      probeUrls: s.redlock,
    },
    peer('redis-semaphore', 'redis-semaphore 5.8 (default: fixed 10 ms polling)', 'redis-semaphore', s.redis),
    floor(
      'proto-blpop',
      'floor: proto-blpop (research prototype: SET NX PX + wake-one BLPOP)',
      'proto-blpop',
      s.redis,
      {
        tables: ['peers'],
        waits: true,
        maxWaiters: WAITER_CAP,
        probeUrls: [s.redis],
      },
    ),
    latchkey('redis-1p', 'latchkey Redis, waiters in one process', s.redis, {
      tables: ['peers'],
      probeUrls: [s.redis],
      crossProcess: false,
      scenarios: ONE_PROCESS,
    }),
    floor('proto-blpop-1p', 'floor: proto-blpop, waiters in one process', 'proto-blpop', s.redis, {
      tables: ['peers'],
      waits: true,
      maxWaiters: WAITER_CAP,
      probeUrls: [s.redis],
      crossProcess: false,
      scenarios: ONE_PROCESS,
    }),
    latchkey('memory', 'memory (one process)', 'memory:', { crossProcess: false }),
    latchkey('sqlite', 'SQLite', `sqlite:${s.tmpDir}/locks.db`),
    latchkey('redlock', 'RedLock (5 nodes)', redlockUrl, { probeUrls: s.redlock }),
    // BENCH_BASELINE_DIST: the RedLock backend of that build beside this one, on the same nodes.
    ...(BASELINE_DIST === undefined
      ? []
      : [
          latchkey('redlock-baseline', 'RedLock (5 nodes), baseline build', redlockUrl, {
            probeUrls: s.redlock,
            dist: BASELINE_DIST,
          }),
        ]),
    latchkey('zk', 'ZooKeeper standalone', `zookeeper://${s.zk}`),
    latchkey('zk3', 'ZooKeeper 3-node ensemble', `zookeeper://${s.zkEnsemble}`),
    // Curator's layout: one process over 4 sessions (its JVM's), where the rows above spread over 4 processes.
    latchkey('zk-1p', 'ZooKeeper standalone, waiters in one process (4 sessions)', `zookeeper://${s.zk}`, {
      crossProcess: false,
      scenarios: ['w10'],
      sessions: 4,
    }),
    latchkey(
      'zk3-1p',
      'ZooKeeper 3-node ensemble, waiters in one process (4 sessions)',
      `zookeeper://${s.zkEnsemble}`,
      {
        crossProcess: false,
        scenarios: ['w10'],
        sessions: 4,
      },
    ),
    curator('curator', 'Apache Curator 5.4 InterProcessMutex (ZooKeeper standalone)', s.zk),
    curator('curator3', 'Apache Curator 5.4 InterProcessMutex (ZooKeeper 3-node ensemble)', s.zkEnsemble),
    // What any Node lock can reach in the ZooKeeper cells: Curator's recipe on the bare protocol, no library.
    ...zkFloors('zk-floor', 'ZooKeeper standalone', s.zk),
    ...zkFloors('zk3-floor', 'ZooKeeper 3-node ensemble', s.zkEnsemble),
    latchkey('etcd', 'etcd', `etcd://${new URL(s.etcd).host}`),
    // BENCH_BASELINE_DIST=<absolute path of another build's dist>: the etcd backend of that build beside this one.
    ...(BASELINE_DIST === undefined
      ? []
      : [latchkey('etcd-baseline', 'etcd, baseline build', `etcd://${new URL(s.etcd).host}`, { dist: BASELINE_DIST })]),
    latchkey('mariadb-table', 'MariaDB table', mysql('table')),
    latchkey('mariadb-get_lock', 'MariaDB get_lock', mysql('get_lock')),
    latchkey('mariadb-for_update', 'MariaDB for_update', mysql('for_update')),
    latchkey('pg-table', 'PostgreSQL table', pg('table')),
    latchkey('pg-advisory', 'PostgreSQL advisory', pg('advisory')),
    floor('znode', 'floor: raw znode create+delete (ZooKeeper standalone)', 'znode', s.zk),
    floor('etcd-txn', 'floor: raw etcd txn put + delete (one lease)', 'etcd-txn', s.etcd),
    // What latchkey's etcd recipe costs with no library: the contended cells' floor (client CPU and gap).
    floor('etcd-floor', "floor: latchkey's etcd line, no library", 'etcd-line', s.etcd, {
      waits: true,
      maxWaiters: 100,
      scenarios: ['w10', 'w100'],
    }),
    // The other recipe, each waiter watching the key before its own (Go's concurrency.Mutex), also with no library.
    floor('etcd-go-floor', "floor: Go's concurrency.Mutex recipe, no library", 'etcd-go', s.etcd, {
      waits: true,
      maxWaiters: 100,
      scenarios: ['w10', 'w100'],
    }),
    floor(
      'etcd-txn-wire',
      "floor: raw etcd txn put + delete (one lease), on latchkey's http2 transport",
      'etcd-txn-wire',
      s.etcd,
    ),
  ]
}
