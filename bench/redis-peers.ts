/**
 * The Redis peers behind the harness's {@link Contender} shape: raw ioredis SET NX PX + DEL, redlock 4.2 /
 * 5.0-beta and redis-semaphore 5.8 (installed in bench/ only), each at its defaults on its own ioredis
 * connection (one per process, shared by that process's waiters, as an application would).
 */
import { randomUUID } from 'node:crypto'
import { readFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { Redis } from 'ioredis'
import { Mutex } from 'redis-semaphore'
import type { Contender } from './lib/contender.js'

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

/** The peers by name. */
export type PeerName = 'raw' | 'redlock4' | 'redlock5' | 'redis-semaphore'

/** Installed versions, for the report. */
export function peerVersions(): Record<string, string> {
  // Read from the files: redlock 5's "exports" hide its package.json from require.
  const version = (name: string) =>
    (
      JSON.parse(readFileSync(new URL(`./node_modules/${name}/package.json`, import.meta.url), 'utf8')) as {
        version: string
      }
    ).version
  return {
    redlock: version('redlock'),
    'redlock (v5)': version('redlock-v5'),
    'redis-semaphore': version('redis-semaphore'),
  }
}

function client(url: string): Redis {
  const c = new Redis(url)
  c.on('error', () => undefined)
  return c
}

const gaveUp = () => undefined

function raw(c: Redis, ns: string): Contender['acquire'] {
  return async (key) => {
    const k = `${ns}:${key}`
    const ok = await c.set(k, randomUUID(), 'PX', 10_000, 'NX')
    return ok === 'OK' ? { release: () => c.del(k) } : undefined
  }
}

function redlock4(c: Redis, ns: string, ttlMs: number): Contender['acquire'] {
  const redlock = new RedlockV4([c])
  return (key) => redlock.lock(`${ns}:${key}`, ttlMs).then((lock) => ({ release: () => lock.unlock() }), gaveUp)
}

function redlock5(c: Redis[], ns: string, ttlMs: number): Contender['acquire'] {
  const redlock = new RedlockV5(c)
  // v5 emits an `error` event for every failed poll; without a listener it would throw.
  redlock.on('error', () => undefined)
  return (key) => redlock.acquire([`${ns}:${key}`], ttlMs).then((lock) => ({ release: () => lock.release() }), gaveUp)
}

/** redis-semaphore at its defaults (fixed 10 ms retry interval); its acquireTimeout bounded by the caller's wait. */
function semaphore(c: Redis, ns: string, ttlMs: number): Contender['acquire'] {
  return async (key, waitMs) => {
    const mutex = new Mutex(c, `${ns}:${key}`, { lockTimeout: ttlMs, acquireTimeout: Math.max(1, waitMs) })
    try {
      await mutex.acquire()
    } catch {
      return undefined
    }
    return { release: () => mutex.release() }
  }
}

/**
 * Opens one peer on its own connection to `url`; every key it writes starts with `ns:`. redlock 5 also takes
 * several comma-separated URLs, one independent master each (as latchkey's RedLock backend is given them).
 */
export function openPeer(peer: PeerName, url: string, ns: string, ttlMs: number): Contender {
  const clients = (peer === 'redlock5' ? url.split(',') : [url]).map(client)
  const c = clients[0] as Redis
  const acquire =
    peer === 'raw'
      ? raw(c, ns)
      : peer === 'redlock4'
        ? redlock4(c, ns, ttlMs)
        : peer === 'redlock5'
          ? redlock5(clients, ns, ttlMs)
          : semaphore(c, ns, ttlMs)
  return { acquire, close: async () => void (await Promise.all(clients.map((x) => x.quit()))) }
}
