import { expect, it } from 'vitest'
import { LockLostError, LockTimeoutError, NotLockHolderError } from '../errors.js'
import { abortedWithin, delay, type SuiteEnv, yieldToIo } from './env.js'

/** Exclusion, waiting, timeouts, abort, ownership, expiry, watchdog, loss, tokens. */
export function mutexCases(env: SuiteEnv): void {
  it('mutual exclusion: 50 concurrent acquirers (5 Locks instances) keep a read-modify-write counter exact', async () => {
    const name = env.uniq('exclusion')
    const instances = Array.from({ length: 5 }, () => env.locks({ ttlMs: env.ms(5_000) }))
    let counter = 0
    let inside = 0
    let maxInside = 0
    await Promise.all(
      Array.from({ length: 50 }, (_, i) =>
        (instances[i % 5] ?? instances[0])?.mutex(name).withLock(async () => {
          inside++
          maxInside = Math.max(maxInside, inside)
          const read = counter
          await yieldToIo()
          counter = read + 1
          inside--
        }),
      ),
    )
    expect(counter).toBe(50)
    expect(maxInside).toBe(1)
  })

  it('tryAcquire on a held lock returns undefined without waiting', async () => {
    const name = env.uniq('try')
    const a = env.locks().mutex(name)
    const b = env.locks().mutex(name)
    const held = await a.acquire()
    expect(await b.tryAcquire()).toBeUndefined()
    await expect(b.acquire({ waitMs: 0 })).rejects.toBeInstanceOf(LockTimeoutError)
    expect(await a.isLocked()).toBe(true)
    await held.release()
    expect(await a.isLocked()).toBe(false)
    const again = await b.tryAcquire()
    expect(again).toBeDefined()
    await again?.release()
  })

  it('waitMs elapses with LockTimeoutError, and the timed-out waiter leaves nothing behind', async () => {
    const name = env.uniq('timeout')
    const a = env.locks().mutex(name)
    const held = await a.acquire()
    const started = performance.now()
    const error = await env
      .locks()
      .mutex(name)
      .acquire({ waitMs: env.ms(150) })
      .catch((e: unknown) => e)
    expect(error).toBeInstanceOf(LockTimeoutError)
    expect((error as LockTimeoutError).retryable).toBe(true)
    expect(performance.now() - started).toBeGreaterThanOrEqual(env.ms(150) - 5)
    expect(await a.isLocked()).toBe(true)
    await held.release()
    const next = await env.locks().mutex(name).tryAcquire()
    expect(next).toBeDefined()
    await next?.release()
  })

  it("abort while waiting rejects with the signal's reason and leaves nothing held or queued", async () => {
    for (const kind of ['mutex', 'fair'] as const) {
      if (!env.supports(kind)) continue
      const name = env.uniq(`abort-${kind}`)
      const make = () => (kind === 'fair' ? env.locks().fairMutex(name) : env.locks().mutex(name))
      const held = await make().acquire()
      const controller = new AbortController()
      const reason = new Error('caller gave up')
      const refused = env.refusedOwners(name)
      const waiting = make().acquire({ signal: controller.signal })
      // Abort once it waits (a fair waiter then has a place in line to leave).
      await env.waitersAsked(name, refused)
      controller.abort(reason)
      await expect(waiting).rejects.toBe(reason)
      await held.release()
      // A fair lock's tryAcquire succeeds only if nobody is in line: the aborted waiter left its place.
      const next = await make().tryAcquire()
      expect(next).toBeDefined()
      await next?.release()
    }
    const pre = new AbortController()
    pre.abort(new Error('already aborted'))
    await expect(env.locks().mutex(env.uniq('pre')).acquire({ signal: pre.signal })).rejects.toBe(pre.signal.reason)
  })

  it('release by a non-holder has no effect and says so (NotLockHolderError); release is idempotent', async () => {
    const name = env.uniq('nonholder')
    const a = await env
      .locks()
      .mutex(name)
      .acquire({ ttlMs: env.ms(100), autoRenew: false })
    await abortedWithin(a.signal, env.ms(1_000))
    const b = await env
      .locks()
      .mutex(name)
      .acquire({ waitMs: env.ms(2_000) })
    await expect(a.release()).rejects.toBeInstanceOf(NotLockHolderError)
    await expect(a.release()).rejects.toBeInstanceOf(NotLockHolderError)
    expect(await env.locks().mutex(name).isLocked()).toBe(true)
    await b.extend()
    await expect(a.extend()).rejects.toBeInstanceOf(NotLockHolderError)
    await b.release()
    await b.release()
    expect(await env.locks().mutex(name).isLocked()).toBe(false)
    await expect(b.extend()).rejects.toBeInstanceOf(NotLockHolderError)
  })

  it('expiry frees an unrenewed lock and aborts its lease.signal with LockLostError', async () => {
    const name = env.uniq('expiry')
    const a = await env
      .locks()
      .mutex(name)
      .acquire({ ttlMs: env.ms(150), autoRenew: false })
    const started = performance.now()
    const b = await env
      .locks()
      .mutex(name)
      .acquire({ waitMs: env.ms(3_000) })
    expect(performance.now() - started).toBeGreaterThanOrEqual(env.ms(100))
    // The expiry timer fires at the local deadline, which is before the server's expiry; a loaded event loop may
    // run it a few ms late, so allow it that long after the successor got the lock.
    expect(await abortedWithin(a.signal, env.ms(100))).toBeInstanceOf(LockLostError)
    expect(b.token > a.token || env.capabilities().fencing === 'none').toBe(true)
    await b.release()
  })

  it('the watchdog holds a lock past 5 x ttl', async () => {
    const name = env.uniq('watchdog')
    // Renewals come every third of the TTL, so a lease survives an event loop (or a server) stalled for up to two
    // thirds of it, and no longer: that is the lease doing its job. 120 ms left 80 ms of slack, which a test file
    // running beside the package checks' tsc exceeded now and then (seen on memory, ZooKeeper, RedLock, PostgreSQL);
    // 250 ms leaves 167 ms (x the backend's time scale), and a lease never renewed still ends after one TTL.
    const ttl = env.ms(250)
    const a = await env.locks().mutex(name).acquire({ ttlMs: ttl })
    // The duration under test: the lease must outlive five TTLs.
    await delay(ttl * 5 + env.ms(50))
    expect(a.signal.aborted).toBe(false)
    expect(await env.locks().mutex(name).tryAcquire()).toBeUndefined()
    expect(a.expiresAt).toBeGreaterThan(Date.now())
    await a.release()
  })

  it('a lease lost behind the holder\'s back aborts lease.signal and reports "lost"', async () => {
    const name = env.uniq('lost')
    const events: string[] = []
    const locks = env.locks({ onEvent: (e) => events.push(e.type) })
    const ttl = env.ms(150)
    const a = await locks.mutex(name).acquire({ ttlMs: ttl })
    expect(await env.backend().forceRelease({ key: `${env.namespace}:${name}`, kind: 'mutex' })).toBe(true)
    const reason = await abortedWithin(a.signal, ttl + env.ms(500))
    expect(reason).toBeInstanceOf(LockLostError)
    expect(events).toContain('lost')
    await expect(a.release()).rejects.toBeInstanceOf(NotLockHolderError)
  })

  it('withLock releases after a callback that ignores lease.signal, and never hides the callback error', async () => {
    const name = env.uniq('withlock')
    const lock = env.locks().mutex(name)
    const ttl = env.ms(90)
    const result = await lock.withLock(
      async () => {
        // The duration under test: a callback that outlives three TTLs without looking at lease.signal.
        await delay(ttl * 3)
        return 42
      },
      { ttlMs: ttl },
    )
    expect(result).toBe(42)
    expect(await lock.isLocked()).toBe(false)
    const boom = new Error('callback failed')
    await expect(
      lock.withLock(async () => {
        await env.backend().forceRelease({ key: `${env.namespace}:${name}`, kind: 'mutex' })
        throw boom
      }),
    ).rejects.toBe(boom)
    expect(await lock.isLocked()).toBe(false)
  })

  it.skipIf(env.capabilities().fencing === 'none')(
    'fencing tokens strictly increase across holders and Locks instances',
    async () => {
      const name = env.uniq('tokens')
      const instances = [env.locks(), env.locks(), env.locks()]
      const tokens: bigint[] = []
      for (let i = 0; i < 12; i++) {
        const lease = await (instances[i % 3] ?? instances[0])?.mutex(name).acquire()
        tokens.push(lease?.token ?? -1n)
        await lease?.release()
      }
      for (let i = 1; i < tokens.length; i++) expect((tokens[i] ?? 0n) > (tokens[i - 1] ?? 0n)).toBe(true)
    },
  )
}
