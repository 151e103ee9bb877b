/**
 * Every contender of the report: the Redis peers (on a private redis-server), every latchkey backend, and
 * the floors (raw server costs; the research's wake-one Redis prototype beside the peers), with the servers
 * they need (loopback defaults, overridable by the tests' variables).
 */
import {
  type ContenderDef,
  curator,
  etcdFloors,
  floor,
  latchkey,
  peer,
  WAITER_CAP,
  zkFloors,
} from './contender-defs.js'

const BASELINE_DIST = process.env.BENCH_BASELINE_DIST

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
    // The least a fenced, owner-checked lock sends per pair: what the uncontended Redis targets are bounded by.
    floor(
      'redis-fenced',
      'floor: fenced lock, no library (INCR + SET NX PX in one script; GET + DEL in one script)',
      'redis-fenced',
      s.redis,
      {
        tables: ['peers'],
        probeUrls: [s.redis],
        scenarios: ['c1', 'c50'],
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
    ...etcdFloors(s.etcd),
    floor(
      'etcd-txn-wire',
      "floor: raw etcd txn put + delete (one lease), on latchkey's http2 transport",
      'etcd-txn-wire',
      s.etcd,
    ),
  ]
}
