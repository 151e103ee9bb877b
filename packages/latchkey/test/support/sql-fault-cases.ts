/**
 * The fault cases the MySQL and PostgreSQL test files both run, each over a backend the file opens its own
 * way (the pools differ: mysql2's `connectionLimit`, pg's `max`).
 */
import { afterAll, expect, it } from 'vitest'
import type { Backend } from '../../src/backend/types.js'
import { BackendUnavailableError, createLocks, type LockEvent } from '../../src/index.js'
import { delay, namespace } from './sql-faults.js'

/** A backend on a pool of its own; `done()` closes the backend, then ends the pool. */
export interface OpenedBackend<P> {
  readonly pool: P
  readonly backend: Backend
  done(): Promise<void>
}

/** Pairs `backend` with the `pool` it runs on. */
export function opened<P extends { end(): Promise<void> }>(pool: P, backend: Backend): OpenedBackend<P> {
  return {
    pool,
    backend,
    done: async () => {
      await backend.close()
      await pool.end()
    },
  }
}

/** Opens a backend of one strategy on a pool of `size` connections, waiting `connectTimeoutMs` for a free one. */
export type OpenBackend = (size: number, connectTimeoutMs?: number) => OpenedBackend<unknown>

/**
 * `open(strategy, poolOptions?, connectTimeoutMs?)`: a backend made by `makeBackend` on a pool of its own;
 * `on(strategy)`: the same for the shared cases, which ask for a pool size (`sized` turns it into pool options).
 *
 * @example
 * const { open, on } = openerOf(mysqlPool, mysqlBackend, (size) => ({ connectionLimit: size }))
 * const { backend, done } = open('get_lock', { connectionLimit: 2 }, 300)
 */
export function openerOf<S extends string, O, P extends { end(): Promise<void> }>(
  makePool: (options?: O) => P,
  makeBackend: (options: { pool: P; strategy: S; connectTimeoutMs?: number }) => Backend,
  sized: (size: number) => NoInfer<O>,
) {
  const open = (strategy: S, poolOptions?: O, connectTimeoutMs?: number): OpenedBackend<P> => {
    const pool = makePool(poolOptions)
    const timeout = connectTimeoutMs === undefined ? {} : { connectTimeoutMs }
    return opened(pool, makeBackend({ pool, strategy, ...timeout }))
  }
  const on =
    (strategy: S): OpenBackend =>
    (size, connectTimeoutMs) =>
      open(strategy, sized(size), connectTimeoutMs)
  return { open, on }
}

/** A namespace of its own for one fault-test file; afterwards its rows are deleted and the `admin` pool ended. */
export function faultNamespace(
  prefix: string,
  cleanup: (ns: string) => Promise<void>,
  admin: { end(): Promise<void> },
): string {
  const ns = namespace(prefix)
  afterAll(async () => {
    await cleanup(ns)
    await admin.end()
  })
  return ns
}

/** Collects the `backend-error` events of every lock set it is given to. */
function backendErrors(): { readonly errors: unknown[]; readonly onEvent: (e: LockEvent) => void } {
  const errors: unknown[] = []
  return { errors, onEvent: (e) => void (e.type === 'backend-error' && errors.push(e.error)) }
}

/**
 * The `'table'` strategy under contention: 200 acquirers of one lock, and every kind on neighbouring keys. A
 * deadlock, a lock-wait timeout or a lost update would show as a backend error or a wrong counter.
 */
export function tableContentionCases(open: OpenBackend, ns: string, options: { maxPollMs?: number } = {}): void {
  it('200 concurrent acquirers on one lock: exact counter, no deadlock or any other backend error', async () => {
    const { backend, done } = open(20)
    const { errors, onEvent } = backendErrors()
    const instances = Array.from({ length: 10 }, () => createLocks({ backend, namespace: ns, onEvent, ...options }))
    let counter = 0
    let inside = 0
    await Promise.all(
      Array.from({ length: 200 }, (_, i) =>
        instances[i % 10]?.mutex('two-hundred').withLock(async () => {
          inside++
          expect(inside).toBe(1)
          const read = counter
          // Holds the lock across a turn of the event loop, so that an overlapping holder would lose this update.
          await delay(1)
          counter = read + 1
          inside--
        }),
      ),
    )
    expect(counter).toBe(200)
    expect(errors).toEqual([])
    await Promise.all(instances.map((l) => l.close()))
    await done()
  }, 120_000)

  it('mixed kinds on 8 neighbouring keys (fair, read/write, semaphore, mutex): no deadlock or other backend error', async () => {
    const { backend, done } = open(20)
    const { errors, onEvent } = backendErrors()
    const locks = Array.from({ length: 4 }, () => createLocks({ backend, namespace: ns, onEvent }))
    const pick = (i: number) => {
      const l = locks[i % 4] ?? locks[0]
      const name = `adjacent-${i % 8}`
      const kinds = [
        () => l?.fairMutex(name),
        () => l?.readWrite(name).read,
        () => l?.readWrite(name).write,
        () => l?.semaphore(`${name}-s`, { permits: 2 }),
        () => l?.mutex(`${name}-m`),
      ]
      return kinds[i % kinds.length]?.()
    }
    // Each hold spans a turn of the event loop, so that the kinds overlap on their keys.
    await Promise.all(Array.from({ length: 120 }, (_, i) => pick(i)?.withLock(() => delay(2), { waitMs: 60_000 })))
    expect(errors).toEqual([])
    await Promise.all(locks.map((l) => l.close()))
    await done()
  }, 120_000)
}

/**
 * A session strategy pins one connection per held lock: on a pool of `size` (two locks' worth), a third lock
 * must fail fast with `BackendUnavailableError` instead of waiting for a connection forever, and succeed once
 * a lock is released.
 */
export function exhaustedPoolCase(open: OpenBackend, size: number, ns: string): void {
  it('an exhausted pool fails fast with BackendUnavailableError instead of hanging', async () => {
    const { backend, done } = open(size, 300)
    const locks = createLocks({ backend, namespace: ns })
    const held = [await locks.mutex('pool-1').acquire(), await locks.mutex('pool-2').acquire()]
    const error = await locks
      .mutex('pool-3')
      .tryAcquire()
      .catch((e: unknown) => e)
    expect(error).toBeInstanceOf(BackendUnavailableError)
    expect(String((error as Error).message)).toMatch(/pool is exhausted/)
    await held[0]?.release()
    const third = await locks.mutex('pool-3').tryAcquire()
    expect(third).toBeDefined()
    await Promise.all([third?.release(), held[1]?.release()])
    await locks.close()
    await done()
  })
}

/** `fromUrl` opens each strategy named in the URL on a pool of its own, which the backend's `close()` ends. */
export function fromUrlCase<S extends string>(
  fromUrl: (url: string) => Promise<Backend>,
  baseUrl: string,
  strategies: readonly S[],
  check: (backend: Backend, strategy: S) => void,
  ns: string,
): void {
  it('opens the strategy named in the URL on a pool of its own, which close() ends', async () => {
    for (const strategy of strategies) {
      const url = new URL(baseUrl)
      url.searchParams.set('strategy', strategy)
      const backend = await fromUrl(url.toString())
      check(backend, strategy)
      const locks = createLocks({ backend, namespace: ns })
      const lease = await locks.mutex(`url-${strategy}`).acquire()
      await lease.release()
      await locks.close()
      await backend.close()
    }
  })
}
