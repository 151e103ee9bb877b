/**
 * What a run needs around it: the shared servers (scripts/servers.sh start, plus the ZooKeeper ensemble), a
 * private redis-server, a temporary folder, the worker pool, and a shutdown that removes all of it again
 * (and what the run left on the servers). Also builds the library when the flash-sale app would run on a
 * stale build.
 */
import { execFileSync } from 'node:child_process'
import { existsSync, mkdtempSync, readdirSync, rmSync, statSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { type RedisServerProcess, startRedisServer } from '../../packages/latchkey/test/support/redis-server-process.js'
import { type Servers, serversFromEnv } from './catalog.js'
import { cleanupAll } from './cleanup.js'
import { runNamespace } from './contender.js'
import { WorkerPool } from './pool.js'

/** The run's surroundings. */
export interface Session {
  readonly redis: RedisServerProcess
  readonly servers: Servers
  readonly namespace: string
  readonly pool: WorkerPool
  readonly tmp: string
  /** Idempotent; returns the cleanups that failed. */
  shutdown(): Promise<string[]>
}

/** Starts the shared servers and the ZooKeeper ensemble; returns whether this run started the ensemble. */
function startServers(root: string): boolean {
  execFileSync('bash', [join(root, 'scripts/servers.sh'), 'start'], { stdio: ['ignore', 'ignore', 'inherit'] })
  const zk = join(root, 'scripts/servers/zookeeper.sh')
  try {
    execFileSync('bash', [zk, 'status-ensemble'], { stdio: 'ignore' })
    return false
  } catch {
    execFileSync('bash', [zk, 'start-ensemble'], { stdio: ['ignore', 'ignore', 'inherit'] })
    return true
  }
}

/** Everything a run needs, started. */
export async function openSession(root: string, workers: number): Promise<Session> {
  const startedEnsemble = startServers(root)
  const redis = await startRedisServer()
  const tmp = mkdtempSync(join(tmpdir(), 'latchkey-bench-'))
  const servers = serversFromEnv(redis.url, tmp)
  const namespace = runNamespace()
  const pool = await WorkerPool.start(workers)
  let closed: Promise<string[]> | undefined
  const shutdown = async (): Promise<string[]> => {
    await pool.close()
    const failures = await cleanupAll(servers, namespace)
    await redis.dispose()
    rmSync(tmp, { recursive: true, force: true })
    if (startedEnsemble) {
      execFileSync('bash', [join(root, 'scripts/servers/zookeeper.sh'), 'stop-ensemble'], { stdio: 'ignore' })
    }
    return failures
  }
  return {
    redis,
    servers,
    namespace,
    pool,
    tmp,
    shutdown: () => {
      closed ??= shutdown()
      return closed
    },
  }
}

/** Newest modification time (ms) of the files under `dir`, 0 when it does not exist. */
function newest(dir: string): number {
  if (!existsSync(dir)) return 0
  let t = 0
  for (const e of readdirSync(dir, { withFileTypes: true, recursive: true })) {
    if (e.isFile()) t = Math.max(t, statSync(join(e.parentPath, e.name)).mtimeMs)
  }
  return t
}

/**
 * The contenders and the flash-sale app import the built library (packages/latchkey/dist): builds it when it is missing or
 * older than the sources (BENCH_NO_BUILD=1 skips this, e.g. while others run tests on this checkout).
 * Returns what the report says about it.
 */
export function ensureBuilt(root: string, log: (line: string) => void): string {
  const src = newest(join(root, 'packages/latchkey/src'))
  const dist = newest(join(root, 'packages/latchkey/dist'))
  if (dist >= src) return `built ${new Date(dist).toISOString()}, up to date with src`
  if (process.env.BENCH_NO_BUILD === '1') {
    return `built ${dist === 0 ? 'never' : new Date(dist).toISOString()}, OLDER than src (BENCH_NO_BUILD=1)`
  }
  log('building packages/latchkey (npm run build): the flash-sale app imports its dist')
  execFileSync('npm', ['run', 'build'], { cwd: root, stdio: ['ignore', 'ignore', 'inherit'] })
  return `rebuilt by this run at ${new Date().toISOString()}`
}
