/**
 * What a backend says when its server is missing or refuses the configuration: every error names the server,
 * bad credentials or a missing database are a BackendUnavailableError with the driver error as cause, a
 * database index Redis refuses is an error at open (ioredis alone would silently use database 0), and a
 * missing ZooKeeper chroot is created.
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Redis } from 'ioredis'
import mysql from 'mysql2/promise'
import pg from 'pg'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { Backend } from '../src/backend/types.js'
import { backendFromUrl } from '../src/backend-url.js'
import { mysqlBackend } from '../src/backends/mysql/index.js'
import { postgresBackend } from '../src/backends/postgres/index.js'
import { redisBackend } from '../src/backends/redis/index.js'
import { zookeeperBackend } from '../src/backends/zookeeper/index.js'
import { createLocks } from '../src/core/locks.js'
import { BackendUnavailableError, QuorumNotReachedError } from '../src/errors.js'
import { deadPort } from './support/dead-port.js'
import { asZkClient, childrenOf, rawClient, removeTree, zkUrl } from './support/zookeeper-env.js'

const suffix = `${process.pid}-${Math.random().toString(36).slice(2, 8)}`

/** The error of one tryAcquire on `backend` (closed afterwards). */
async function tryError(backend: Backend): Promise<Error> {
  const locks = createLocks({ backend, namespace: `errors-${suffix}` })
  try {
    await locks.mutex('probe').tryAcquire()
  } catch (error) {
    return error as Error
  } finally {
    await locks.close()
    await backend.close()
  }
  throw new Error(`${backend.name}: tryAcquire succeeded against a dead server`)
}

describe('errors name the server that did not answer', () => {
  let port: number
  beforeAll(async () => {
    port = await deadPort()
  })

  const urls: Array<[string, (p: number) => string]> = [
    ['redis', (p) => `redis://127.0.0.1:${p}/0?commandTimeoutMs=300`],
    ['zookeeper', (p) => `zookeeper://127.0.0.1:${p}?connectTimeoutMs=300&sessionTimeoutMs=2000`],
    ['etcd', (p) => `etcd://127.0.0.1:${p}?callTimeoutMs=500`],
    ['mysql', (p) => `mysql://root@127.0.0.1:${p}/test?connectTimeoutMs=2000`],
    ['postgres', (p) => `postgres://postgres@127.0.0.1:${p}/test?connectTimeoutMs=2000`],
  ]
  it.each(urls)('%s: BackendUnavailableError naming 127.0.0.1:<port>', async (_name, url) => {
    const error = await tryError(await backendFromUrl(url(port)))
    expect(error).toBeInstanceOf(BackendUnavailableError)
    expect(error.message).toContain(`127.0.0.1:${port}`)
  })

  it('redlock: QuorumNotReachedError naming every node', async () => {
    const other = await deadPort()
    const error = await tryError(
      await backendFromUrl(`redlock://127.0.0.1:${port},127.0.0.1:${other},127.0.0.1:${port}`),
    )
    expect(error).toBeInstanceOf(QuorumNotReachedError)
    expect(error.message).toContain(`127.0.0.1:${port} error`)
    expect(error.message).toContain(`127.0.0.1:${other} error`)
  })

  it('clients handed in are named too (ioredis, mysql2 pool, pg pool)', async () => {
    const client = new Redis({ host: '127.0.0.1', port, lazyConnect: true, maxRetriesPerRequest: 0 })
    client.on('error', () => undefined)
    const redis = await tryError(redisBackend({ client, commandTimeoutMs: 300 }))
    client.disconnect()
    expect(redis.message).toContain(`Redis 127.0.0.1:${port}`)
    const myPool = mysql.createPool({ host: '127.0.0.1', port, user: 'root' })
    const my = await tryError(mysqlBackend({ pool: myPool }))
    await myPool.end()
    expect(my.message).toContain(`mysql backend at 127.0.0.1:${port}`)
    const pgPool = new pg.Pool({ connectionString: `postgres://postgres@127.0.0.1:${port}/test` })
    const pgError = await tryError(postgresBackend({ pool: pgPool }))
    await pgPool.end()
    expect(pgError.message).toContain(`postgres backend at 127.0.0.1:${port}`)
  })
})

describe('sqlite errors name the database file', () => {
  it('a call on a closed sqlite backend names its file', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'latchkey-errors-'))
    try {
      const file = join(dir, 'locks.db')
      const backend = await backendFromUrl(`sqlite:${file}`)
      await backend.close()
      const error = await tryError(backend)
      expect(error).toBeInstanceOf(BackendUnavailableError)
      expect(error.message).toContain(`sqlite backend at ${JSON.stringify(file)}`)
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  })
})

describe('SQL login and database errors are BackendUnavailableError with the driver error as cause', () => {
  it.each([
    ['mysql: unknown database', `mysql://root@127.0.0.1:3306/latchkey_nodb_${process.pid}`, { errno: 1049 }],
    // MariaDB answers an unknown user with 1045 or, as if the user had no password, 1698: it fakes the
    // authentication of a user it does not have with a randomly chosen plugin, so as not to tell who exists.
    [
      'mysql: unknown user',
      `mysql://latchkey_nouser_${process.pid}:pw@127.0.0.1:3306/test`,
      { code: expect.stringMatching(/^ER_ACCESS_DENIED_(ERROR|NO_PASSWORD_ERROR)$/) },
    ],
    [
      'postgres: unknown database',
      `postgres://postgres@127.0.0.1:5432/latchkey_nodb_${process.pid}`,
      { code: '3D000' },
    ],
    ['postgres: unknown role', `postgres://latchkey_nouser_${process.pid}@127.0.0.1:5432/test`, { code: '28000' }],
  ])('%s', async (_name, url, cause) => {
    const error = await tryError(await backendFromUrl(url))
    expect(error).toBeInstanceOf(BackendUnavailableError)
    expect(error.message).toMatch(/backend at 127\.0\.0\.1:(3306|5432): .*check the user, password and database/)
    const { errno, code } = error.cause as { errno?: unknown; code?: unknown }
    expect({ errno, code }).toMatchObject(cause)
  })
})

describe('Redis database index', () => {
  it.each([
    ['redis', 'redis://127.0.0.1:6379/99', 'Redis 127.0.0.1:6379'],
    ['redlock', 'redlock://127.0.0.1:6381,127.0.0.1:6382,127.0.0.1:6383/99', 'Redis 127.0.0.1:638'],
  ])('%s: a database the server refuses is a RangeError at open, not a silent database 0', async (_n, url, server) => {
    const error = await backendFromUrl(url).then(
      async (b) => {
        await b.close()
        return undefined
      },
      (e: unknown) => e as Error,
    )
    expect(error).toBeInstanceOf(RangeError)
    expect(error?.message).toContain(`${server}`)
    expect(error?.message).toContain('refused database 99')
  })

  it('a database the server has is used (not database 0)', async () => {
    const backend = await backendFromUrl('redis://127.0.0.1:6379/15')
    const locks = createLocks({ backend, namespace: `db15-${suffix}` })
    const db15 = new Redis({ db: 15 })
    try {
      const lease = await locks.mutex('probe').acquire({ waitMs: 2_000 })
      expect((await db15.keys(`*db15-${suffix}*`)).length).toBeGreaterThan(0)
      await lease.release()
    } finally {
      await locks.close()
      await backend.close()
      const keys = await db15.keys(`*db15-${suffix}*`)
      if (keys.length > 0) await db15.del(...keys)
      db15.disconnect()
    }
  })
})

describe('ZooKeeper chroot', () => {
  const chroot = `/latchkey-chroot-${suffix}`
  afterAll(async () => {
    const client = await rawClient(zkUrl())
    await removeTree(client, chroot)
    client.close()
  })

  it('a missing chroot is created (as Curator creates its namespace) instead of failing with NO_NODE', async () => {
    const backend = await backendFromUrl(`zookeeper://${zkUrl()}${chroot}?sessionTimeoutMs=6000`)
    const locks = createLocks({ backend, namespace: 'chroot' })
    try {
      const lease = await locks.mutex('probe').acquire({ waitMs: 5_000 })
      const client = await rawClient(zkUrl())
      expect(await childrenOf(client, `${chroot}/latchkey`)).toHaveLength(1)
      client.close()
      await lease.release()
    } finally {
      await locks.close()
      await backend.close()
    }
  })

  it('a client handed in, chrooted to a missing node, fails with a BackendUnavailableError that says so', async () => {
    const client = await rawClient(`${zkUrl()}${chroot}-missing`)
    const backend = zookeeperBackend({ client: asZkClient(client) })
    try {
      const error = await tryError(backend)
      expect(error).toBeInstanceOf(BackendUnavailableError)
      expect(error.message).toMatch(/zookeeper backend at .*the chroot of the client does not exist/)
    } finally {
      client.close()
    }
  })
})
