/**
 * `waitMs` and `unavailableMs` against a real Redis that is stopped (a private redis-server; the shared 6379 is
 * never touched): the acquire ends at its deadline, not at the backend's command timeout (5 s by default), with
 * `BackendUnavailableError` (the server, not a holder, is why), and a try abandoned at the deadline that a paused
 * server grants later is given back.
 */
import { randomUUID } from 'node:crypto'
import { describe, expect, it } from 'vitest'
import { redisBackend } from '../src/backends/redis/index.js'
import type { Lease } from '../src/core/lease.js'
import { createLocks, type Locks } from '../src/core/locks.js'
import { BackendUnavailableError } from '../src/errors.js'
import { eventually } from './support/eventually.js'
import { clientFlavours, ioredisClient, type OpenedClient } from './support/redis-backend-module.js'
import { privateRedisServer } from './support/redis-server-suite.js'
import { timed } from './support/timed.js'

const server = privateRedisServer()

const flavours = clientFlavours(() => server.url)

/** Opens a client and Locks (`options`), takes one lock while Redis is up, stops Redis and times `run`. */
async function whileStopped(
  open: () => Promise<OpenedClient>,
  options: { unavailableMs?: number },
  run: (locks: Locks) => Promise<unknown>,
): Promise<{ error: unknown; ms: number }> {
  const { client, close } = await open()
  const backend = redisBackend({ client })
  const locks = createLocks({ backend, namespace: `deadline-${randomUUID()}`, ...options })
  try {
    await (await locks.mutex('warm').acquire()).release()
    await server.stop()
    return await timed(() => run(locks))
  } finally {
    await server.start()
    await locks.close()
    await backend.close()
    await close()
  }
}

describe.each(flavours)('a stopped Redis (%s)', (_name, open) => {
  it('acquire({ waitMs: 2000 }) rejects at 2 s with BackendUnavailableError, not at the command timeout', async () => {
    const { error, ms } = await whileStopped(open, {}, (locks) => locks.mutex('w').acquire({ waitMs: 2_000 }))
    expect(error).toBeInstanceOf(BackendUnavailableError)
    expect((error as Error).message).not.toMatch(/find the holder/)
    expect((error as Error).message).toMatch(/redis backend (did not answer|was unreachable)/)
    expect((error as Error).cause).toBeInstanceOf(Error)
    expect(ms).toBeGreaterThanOrEqual(1_995)
    expect(ms).toBeLessThan(2_000 + 150)
  }, 30_000)

  it('an infinite wait rejects after unavailableMs with BackendUnavailableError', async () => {
    const { error, ms } = await whileStopped(open, { unavailableMs: 800 }, (locks) =>
      locks.mutex('s').acquire({ waitMs: Number.POSITIVE_INFINITY }),
    )
    expect(error).toBeInstanceOf(BackendUnavailableError)
    expect((error as Error).message).toMatch(/unavailableMs \(800 ms\)/)
    expect(ms).toBeGreaterThanOrEqual(795)
    expect(ms).toBeLessThan(800 + 150)
  }, 30_000)
})

describe('a try abandoned at the deadline', () => {
  it('against a paused Redis: answered "acquired" after the deadline, it is released at once', async () => {
    const client = ioredisClient(server.url)
    const admin = ioredisClient(server.url)
    const backend = redisBackend({ client })
    const released: string[] = []
    const release = backend.release.bind(backend)
    backend.release = (ref) => {
      released.push(ref.key)
      return release(ref)
    }
    const locks = createLocks({ backend, namespace: `late-${randomUUID()}` })
    const freeNow = () =>
      locks
        .mutex('late')
        .isLocked()
        .then(
          (held) => !held,
          () => false,
        )
    try {
      await (await locks.mutex('warm').acquire()).release()
      released.length = 0
      // CLIENT PAUSE ALL: the server holds every other client's commands and runs them when the pause ends.
      await admin.call('CLIENT', 'PAUSE', '1000', 'ALL')
      const { error, ms } = await timed(() => locks.mutex('late').acquire({ waitMs: 300 }))
      expect(error).toBeInstanceOf(BackendUnavailableError)
      expect((error as Error).message).toMatch(/did not answer before waitMs/)
      expect(ms).toBeLessThan(300 + 150)
      expect(released).toEqual([])
      await eventually('the late grant released', () => released.length > 0, 8_000)
      await eventually('the lock free again', freeNow, 8_000)
      const lease = await locks.mutex('late').tryAcquire()
      expect(lease).toBeDefined()
      await lease?.release()
    } finally {
      await admin.call('CLIENT', 'UNPAUSE').catch(() => undefined)
      await admin.quit()
      await locks.close()
      await backend.close()
      await client.quit().catch(() => client.disconnect())
    }
  }, 30_000)
})

describe('a reply that comes after commandTimeoutMs (a paused Redis)', () => {
  /** A backend with a short command timeout, its Locks, and `run` timed while CLIENT PAUSE holds the commands. */
  async function whilePaused(run: (locks: Locks) => Promise<void>, before?: (locks: Locks) => Promise<void>) {
    const client = ioredisClient(server.url)
    const admin = ioredisClient(server.url)
    const backend = redisBackend({ client, commandTimeoutMs: 100 })
    const locks = createLocks({ backend, namespace: `late-reply-${randomUUID()}` })
    try {
      await (await locks.mutex('warm').acquire()).release()
      await before?.(locks)
      await admin.call('CLIENT', 'PAUSE', '600', 'ALL')
      await run(locks)
    } finally {
      await admin.call('CLIENT', 'UNPAUSE').catch(() => undefined)
      await admin.quit()
      await locks.close()
      await backend.close()
      await client.quit().catch(() => client.disconnect())
    }
  }

  it('a short acquire granted after its command timed out is given back', async () => {
    await whilePaused(async (locks) => {
      const lock = locks.mutex('late-free')
      await expect(lock.tryAcquire()).rejects.toBeInstanceOf(BackendUnavailableError)
      // The pause ends and the grant arrives: nobody holds it, so the backend releases it at once.
      await eventually('the late grant given back', async () => !(await lock.isLocked().catch(() => true)), 8_000)
    })
  }, 20_000)

  it('a short acquire of a held lock answered after its command timed out is ignored', async () => {
    let held: Lease | undefined
    await whilePaused(
      async (locks) => {
        const lock = locks.mutex('late-held')
        await expect(lock.tryAcquire()).rejects.toBeInstanceOf(BackendUnavailableError)
        // Its "held" reply comes once the pause ends; the lock stays with its holder, who releases it.
        await eventually('the pause over', async () => (await lock.isLocked().catch(() => false)) === true, 8_000)
        await held?.release()
      },
      async (locks) => {
        held = await locks.mutex('late-held').acquire()
      },
    )
  }, 20_000)
})
