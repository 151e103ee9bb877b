/**
 * The contenders of bench/redis-locks.ts behind one shape: raw ioredis SET NX PX + DEL, latchkey's Redis
 * backend, redlock 4.2 / 5.0-beta and redis-semaphore 5.8 (installed in bench/ only), each at its defaults on
 * its own ioredis connection, and an in-process FIFO mutex as the floor of the contended scenarios.
 */
import { randomUUID } from 'node:crypto'
import { createRequire } from 'node:module'
import { Redis } from 'ioredis'
import { Mutex } from 'redis-semaphore'
import { redisBackend } from '../packages/latchkey/src/backends/redis/index.js'
import { createLocks } from '../packages/latchkey/src/index.js'

const require = createRequire(import.meta.url)
// redlock 5 beta: its package "exports" hide its typings from NodeNext resolution; typed here.
const RedlockV5 = (require('redlock-v5') as { default: unknown }).default as new (
  clients: Redis[],
) => {
  on(event: 'error', listener: (error: unknown) => void): unknown
  acquire(resources: string[], ttl: number): Promise<{ release(): Promise<unknown> }>
}
// redlock 4 is CommonJS with `module.exports = Redlock`.
const RedlockV4 = require('redlock') as new (
  clients: Redis[],
  options?: Record<string, unknown>,
) => { lock(resource: string, ttl: number): Promise<{ unlock(): Promise<unknown> }> }

export const TTL_MS = 10_000

/** A lock held by a contender. */
export interface Held {
  release(): Promise<unknown>
}

/** One library under test. `acquire` resolves undefined when the library gave up waiting. */
export interface Contender {
  readonly name: string
  /** Whether it can wait for a taken lock (raw cannot). */
  readonly waits: boolean
  acquire(key: string): Promise<Held | undefined>
  close(): Promise<void>
}

function client(url: string): Redis {
  const c = new Redis(url)
  c.on('error', () => undefined)
  return c
}

const gaveUp = () => undefined

export function raw(url: string): Contender {
  const c = client(url)
  return {
    name: 'raw ioredis SET NX PX + DEL',
    waits: false,
    async acquire(key) {
      const ok = await c.set(key, randomUUID(), 'PX', TTL_MS, 'NX')
      return ok === 'OK' ? { release: () => c.del(key) } : undefined
    },
    close: async () => void (await c.quit()),
  }
}

export function latchkey(url: string): Contender {
  const c = client(url)
  const backend = redisBackend({ client: c })
  const locks = createLocks({ backend, ttlMs: TTL_MS })
  return {
    name: 'latchkey redis',
    waits: true,
    acquire: (key) => locks.mutex(key).acquire({ waitMs: 60_000 }),
    async close() {
      await locks.close()
      await backend.close()
      await c.quit()
    },
  }
}

export function redlock4(url: string): Contender {
  const c = client(url)
  const redlock = new RedlockV4([c])
  return {
    name: 'redlock 4.2.0',
    waits: true,
    acquire: (key) => redlock.lock(key, TTL_MS).then((lock) => ({ release: () => lock.unlock() }), gaveUp),
    close: async () => void (await c.quit()),
  }
}

export function redlock5(url: string): Contender {
  const c = client(url)
  const redlock = new RedlockV5([c])
  // v5 emits an `error` event for every failed poll; without a listener it would throw.
  redlock.on('error', () => undefined)
  return {
    name: 'redlock 5.0.0-beta.2',
    waits: true,
    acquire: (key) => redlock.acquire([key], TTL_MS).then((lock) => ({ release: () => lock.release() }), gaveUp),
    close: async () => void (await c.quit()),
  }
}

export function redisSemaphore(url: string): Contender {
  const c = client(url)
  return {
    name: 'redis-semaphore 5.8.0',
    waits: true,
    async acquire(key) {
      const mutex = new Mutex(c, key, { lockTimeout: TTL_MS })
      try {
        await mutex.acquire()
      } catch {
        return undefined
      }
      return { release: () => mutex.release() }
    },
    close: async () => void (await c.quit()),
  }
}

/** An in-process FIFO mutex: the floor a Redis lock can approach in the contended scenarios. */
export function local(): Contender {
  const held = new Set<string>()
  const queues = new Map<string, (() => void)[]>()
  const release = (key: string) => {
    const next = queues.get(key)?.shift()
    if (next !== undefined) next()
    else held.delete(key)
  }
  return {
    name: 'local (in-process FIFO, no Redis)',
    waits: true,
    async acquire(key) {
      if (held.has(key)) {
        await new Promise<void>((resolve) => {
          const q = queues.get(key) ?? []
          q.push(resolve)
          queues.set(key, q)
        })
      } else held.add(key)
      return { release: async () => release(key) }
    },
    close: async () => undefined,
  }
}
