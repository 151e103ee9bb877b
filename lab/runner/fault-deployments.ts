import { type ChildProcess, execFileSync, spawn } from 'node:child_process'
import { chownSync, existsSync, mkdirSync, rmSync } from 'node:fs'
import { join } from 'node:path'
import { Redis } from 'ioredis'
import { sleep } from '../lib/clock.js'
import { FakeClock } from './fake-clock.js'
import { FaultProxy } from './fault-proxy.js'
import { startPrivateRedis, waitForPort } from './redis-server.js'
import type { Prepared } from './target.js'

/**
 * Deployments that only the clock and failover scenarios use, started fresh for each run and stopped by its
 * cleanup: a server whose clock has been stepped must not carry its offset into the next scenario.
 *
 * A deployment a scenario needs beyond a target's usual one:
 * - `server-clock`: the lock server's wall clock is libfaketime's, so the nemesis can step it (`jumpServerClock`);
 *   with `rate` it runs that many times faster than real time from the start (drift);
 * - `replica`: a Redis primary with an asynchronous replica, behind one address that a failover moves.
 */
export type Setup = { kind: 'server-clock'; rate?: number } | { kind: 'replica' }

/** Ports relative to the lab's Redis port (LAB_REDIS_PORT): the clock deployments and the replicated pair. */
const CLOCK_REDIS_OFFSET = 5
const CLOCK_REDLOCK_OFFSET = 20
const REPLICA_OFFSET = 30
/** How many RedLock nodes get the faulty clock: a majority, the least that can hand the lock to a second client. */
const REDLOCK_CLOCK_NODES = 3
/**
 * How far the replica is behind its primary. On loopback a replica is well under a millisecond behind, so a
 * failover would almost never lose a fresh grant; across data centres, or under load, tens to hundreds of
 * milliseconds are ordinary. Half a second makes every failover right after a grant lose it.
 */
export const REPLICATION_LAG_MS = 500

const clockFor = (dataRoot: string, namespace: string, setup: Setup): FakeClock =>
  new FakeClock(join(dataRoot, 'clocks', `${namespace}.clock`), setup.kind === 'server-clock' ? setup.rate : undefined)

/** A private redis-server on a fake clock. */
export async function clockRedis(redisPort: number, dataRoot: string, namespace: string, setup: Setup) {
  const clock = clockFor(dataRoot, namespace, setup)
  const port = redisPort + CLOCK_REDIS_OFFSET
  const server = await startPrivateRedis(port, join(dataRoot, `redis-${port}`), 'none', { env: clock.env() })
  return {
    url: server.url,
    cleanup: () => server.stop(),
    jumpServerClock: (ms: number) => clock.jump(ms),
  } satisfies Prepared
}

/** Five fresh RedLock nodes, the first three on one fake clock (stepped together). */
export async function clockRedlock(redisPort: number, dataRoot: string, namespace: string, setup: Setup) {
  const clock = clockFor(dataRoot, namespace, setup)
  const ports = [0, 1, 2, 3, 4].map((i) => redisPort + CLOCK_REDLOCK_OFFSET + i)
  const nodes = await Promise.all(
    ports.map((port, i) =>
      startPrivateRedis(
        port,
        join(dataRoot, `redis-${port}`),
        'none',
        i < REDLOCK_CLOCK_NODES ? { env: clock.env() } : {},
      ),
    ),
  )
  return {
    url: `redlock://${ports.map((p) => `127.0.0.1:${p}`).join(',')}`,
    cleanup: async () => void (await Promise.all(nodes.map((n) => n.stop()))),
    jumpServerClock: (ms: number) => clock.jump(ms),
  } satisfies Prepared
}

const PG_BIN = process.env.LAB_PG_BIN ?? '/usr/lib/postgresql/15/bin'

/**
 * A private PostgreSQL on a fake clock (the table strategy times leases on the database's clock; the advisory
 * strategy on the client's). PostgreSQL refuses to run as root, so the server runs as the `postgres` user; the
 * cluster is made once (initdb, trust authentication on 127.0.0.1) and each run starts a fresh postmaster on it.
 */
export async function clockPostgres(
  pgPort: number,
  dataRoot: string,
  namespace: string,
  setup: Setup,
  strategy: string,
) {
  const clock = clockFor(dataRoot, namespace, setup)
  const dir = join(dataRoot, `postgres-${pgPort}`)
  const uid = Number(execFileSync('id', ['-u', 'postgres']).toString())
  const gid = Number(execFileSync('id', ['-g', 'postgres']).toString())
  if (!existsSync(join(dir, 'PG_VERSION'))) {
    mkdirSync(dir, { recursive: true })
    chownSync(dir, uid, gid)
    execFileSync(join(PG_BIN, 'initdb'), ['-D', dir, '--auth=trust', '-U', 'postgres'], { uid, gid, stdio: 'ignore' })
  }
  const child: ChildProcess = spawn(
    join(PG_BIN, 'postgres'),
    ['-D', dir, '-p', String(pgPort), '-k', dir, '-c', 'listen_addresses=127.0.0.1', '-c', 'fsync=off'],
    { uid, gid, stdio: 'ignore', env: { ...process.env, ...clock.env() } },
  )
  await waitForPort(pgPort, 30_000)
  return {
    url: `postgres://postgres@127.0.0.1:${pgPort}/postgres?strategy=${strategy}`,
    cleanup: async () => {
      if (child.exitCode !== null || child.signalCode !== null) return
      const exited = new Promise((resolve) => child.once('exit', resolve))
      // Immediate shutdown: the postmaster takes its backends down with it.
      child.kill('SIGQUIT')
      await exited
    },
    jumpServerClock: (ms: number) => clock.jump(ms),
  } satisfies Prepared
}

/**
 * A private MariaDB on a fake clock (its table strategy times leases on the database's clock; GET_LOCK on the
 * client's). The data dir is made once (mariadb-install-db, root without a password) and each run starts a fresh
 * mariadbd on it, which drops to the `mysql` user itself.
 */
export async function clockMariadb(port: number, dataRoot: string, namespace: string, setup: Setup, strategy: string) {
  const clock = clockFor(dataRoot, namespace, setup)
  const dir = join(dataRoot, `mariadb-${port}`)
  if (!existsSync(join(dir, 'data', 'mysql'))) {
    rmSync(dir, { recursive: true, force: true })
    mkdirSync(dir, { recursive: true })
    execFileSync(
      'mariadb-install-db',
      ['--no-defaults', '--user=mysql', `--datadir=${join(dir, 'data')}`, '--auth-root-authentication-method=normal'],
      { stdio: 'ignore' },
    )
  }
  const child: ChildProcess = spawn(
    'mariadbd',
    [
      '--no-defaults',
      '--user=mysql',
      `--datadir=${join(dir, 'data')}`,
      `--port=${port}`,
      '--bind-address=127.0.0.1',
      // In the data dir: mariadbd runs as mysql and cannot create its socket in a directory root owns.
      `--socket=${join(dir, 'data', 'sock')}`,
      '--skip-log-bin',
    ],
    { stdio: 'ignore', env: { ...process.env, ...clock.env() } },
  )
  await waitForPort(port, 30_000)
  execFileSync('mariadb', ['-h127.0.0.1', `-P${port}`, '-uroot', '-e', 'CREATE DATABASE IF NOT EXISTS test'])
  return {
    url: `mysql://root@127.0.0.1:${port}/test?strategy=${strategy}`,
    cleanup: async () => {
      if (child.exitCode !== null || child.signalCode !== null) return
      const exited = new Promise((resolve) => child.once('exit', resolve))
      child.kill('SIGKILL')
      await exited
    },
    jumpServerClock: (ms: number) => clock.jump(ms),
  } satisfies Prepared
}

/**
 * SQLite on a fake clock: the lock's clock is the host's wall clock, which every client reads (the clients' expiry
 * arithmetic is the "server"), so all the clients share one fake clock and a step moves it for all of them.
 */
export function clockSqlite(dataRoot: string, namespace: string, setup: Setup) {
  const clock = clockFor(dataRoot, namespace, setup)
  return { clientEnv: clock.env(), jumpServerClock: (ms: number) => clock.jump(ms) }
}

/** Sends one command to a redis-server. */
async function command(port: number, ...args: string[]): Promise<unknown> {
  const redis = new Redis({ host: '127.0.0.1', port, maxRetriesPerRequest: 1, lazyConnect: true })
  try {
    await redis.connect()
    return await redis.call(args[0]!, ...args.slice(1))
  } finally {
    redis.disconnect()
  }
}

/** Waits until the replica on `port` has its link to the primary up (its first sync done). */
async function synced(port: number): Promise<void> {
  for (let attempt = 0; attempt < 100; attempt++) {
    const info = String(await command(port, 'INFO', 'replication').catch(() => ''))
    if (info.includes('master_link_status:up')) return
    await sleep(100)
  }
  throw new Error(`lab: the replica on ${port} never synced`)
}

/**
 * A Redis primary and its replica (no persistence, the usual cache deployment), replication running through a
 * proxy that delays it by REPLICATION_LAG_MS, and the clients' address in front of the primary. `failover()` is
 * what Sentinel does when a primary dies: the primary is killed -9, the replica promoted (REPLICAOF NO ONE) with
 * whatever it had received, the clients' address moved to it, and the old primary restarted empty as the new
 * primary's replica (so the next failover goes back).
 */
export async function replicatedRedis(redisPort: number, dataRoot: string) {
  const ports = [redisPort + REPLICA_OFFSET, redisPort + REPLICA_OFFSET + 1]
  const dirs = ports.map((port) => join(dataRoot, `redis-${port}`))
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true })
  // A restarted replica resyncs at once (the default waits 5 s for more replicas to share the transfer): each
  // failover then promotes a replica that has all but the last REPLICATION_LAG_MS of its primary's writes.
  const quickSync = ['--repl-diskless-sync-delay', '0']
  let primary = await startPrivateRedis(ports[0]!, dirs[0]!, 'none', { args: quickSync })
  let link = new FaultProxy('127.0.0.1', primary.port, REPLICATION_LAG_MS)
  await link.start()
  let replica = await startPrivateRedis(ports[1]!, dirs[1]!, 'none', {
    args: [...quickSync, '--replicaof', '127.0.0.1', String(link.port)],
  })
  await synced(replica.port)
  const front = new FaultProxy('127.0.0.1', primary.port)
  await front.start()
  return {
    url: `redis://127.0.0.1:${front.port}`,
    cleanup: async () => {
      await front.close()
      await link.close()
      await primary.stop()
      await replica.stop()
    },
    failover: async () => {
      await primary.kill()
      // What the replication link still carried dies with the primary.
      await link.close()
      await command(replica.port, 'REPLICAOF', 'NO', 'ONE')
      front.retarget(replica.port)
      link = new FaultProxy('127.0.0.1', replica.port, REPLICATION_LAG_MS)
      await link.start()
      await primary.relaunch([...quickSync, '--replicaof', '127.0.0.1', String(link.port)])
      ;[primary, replica] = [replica, primary]
      // The next failover finds a replica that is up to date but for the lag, as in a deployment between failures.
      await synced(replica.port)
    },
  } satisfies Prepared
}
