import { expect, it } from 'vitest'
import type { Lease } from '../core/lease.js'
import { LockLostError, UnsupportedError } from '../errors.js'
import { abortedWithin, type SuiteEnv, yieldToIo } from './env.js'
import { eventually, latch } from './eventually.js'

/** Reentrancy, fair order, read-write, semaphore, multi, lock-delay. */
export function kindCases(env: SuiteEnv): void {
  it('reentrancy: nested withLock/acquire in the call tree re-enters and counts; siblings never do', async () => {
    const name = env.uniq('reentrant')
    const lock = env.locks().mutex(name)
    const other = env.locks().mutex(name)
    await lock.withLock(async (outer) => {
      await lock.withLock(async (inner) => {
        expect(inner.token).toBe(outer.token)
        const nested = await lock.acquire({ waitMs: 0 })
        expect(nested.token).toBe(outer.token)
        await nested.release()
      })
      // The inner release did not free the lock.
      expect(await other.tryAcquire()).toBeUndefined()
      expect(await lock.isLocked()).toBe(true)
    })
    expect(await lock.isLocked()).toBe(false)
    // Code outside the callback's call tree does not re-enter by accident.
    const [inside, done] = [latch(), latch()]
    const holding = lock.withLock(async () => {
      inside.open()
      await done.wait()
    })
    await inside.wait()
    const sibling = await lock.tryAcquire()
    done.open()
    expect(sibling).toBeUndefined()
    await holding
  })

  it.skipIf(!env.supports('read') || !env.supports('write'))(
    'reentrancy across modes: read inside write re-enters, write inside read throws UnsupportedError',
    async () => {
      const rw = env.locks().readWrite(env.uniq('rw-reenter'))
      await rw.write.withLock(async (w) => {
        await rw.read.withLock(async (r) => expect(r.token).toBe(w.token))
      })
      await rw.read.withLock(async () => {
        await expect(rw.write.acquire({ waitMs: 0 })).rejects.toBeInstanceOf(UnsupportedError)
      })
      expect(await rw.write.isLocked()).toBe(false)
    },
  )

  it.skipIf(!env.supports('fair'))('fair mutex grants in request order (FIFO)', async () => {
    const name = env.uniq('fair')
    const first = await env.locks().fairMutex(name).acquire()
    const order: number[] = []
    const waiters: Promise<void>[] = []
    for (let i = 0; i < 5; i++) {
      const lock = env.locks().fairMutex(name)
      waiters.push(
        lock.withLock(async () => {
          order.push(i)
        }),
      )
      // Waiter i is in line once the backend has answered its first try; only then may i + 1 ask.
      await env.waitersAsked(name, i)
    }
    await first.release()
    await Promise.all(waiters)
    expect(order).toEqual([0, 1, 2, 3, 4])
  })

  it.skipIf(!env.supports('read') || !env.supports('write'))(
    'read-write: readers share, a writer excludes, a waiting writer is not starved by new readers',
    async () => {
      const name = env.uniq('rw')
      const [a, b, c] = [env.locks().readWrite(name), env.locks().readWrite(name), env.locks().readWrite(name)]
      const r1 = await a.read.acquire()
      const r2 = await b.read.tryAcquire()
      expect(r2).toBeDefined()
      expect(await c.write.tryAcquire()).toBeUndefined()
      await r2?.release()
      let writerHas = false
      const refused = env.refusedOwners(name)
      const writer = c.write.acquire({ waitMs: env.ms(5_000) }).then((lease) => {
        writerHas = true
        return lease
      })
      await env.waitersAsked(name, refused)
      // A reader arriving after the writer started waiting must queue behind it.
      expect(await b.read.tryAcquire()).toBeUndefined()
      expect(writerHas).toBe(false)
      let lateHas = false
      const lateReader = b.read.acquire({ waitMs: env.ms(5_000) }).then((lease) => {
        lateHas = true
        return lease
      })
      await r1.release()
      const w = await writer
      expect(await a.read.tryAcquire()).toBeUndefined()
      expect(lateHas).toBe(false)
      await w.release()
      const late = await lateReader
      await late.release()
    },
  )

  it.skipIf(!env.supports('semaphore'))(
    'semaphore never exceeds its permits, and an expired holder gives its permit back',
    async () => {
      const name = env.uniq('semaphore')
      let inside = 0
      let maxInside = 0
      // The first holders stay until three are inside at once, so the permit count is tested by what happened,
      // not by how long a hold overlaps the next grant (a fixed 10 ms hold did not overlap on a loaded host). A
      // fourth holder granted meanwhile would be counted inside with them.
      const full = latch()
      await Promise.all(
        Array.from({ length: 12 }, () =>
          env
            .locks()
            .semaphore(name, { permits: 3 })
            .withLock(async () => {
              inside++
              maxInside = Math.max(maxInside, inside)
              if (inside >= 3) full.open()
              await eventually('three permits held at once', () => full.isOpen, env.ms(5_000), 5)
              await yieldToIo()
              inside--
            }),
        ),
      )
      expect(maxInside).toBe(3)
      const sem = env.locks().semaphore(name, { permits: 2 })
      // The renewed permit first, then the one left to expire: the checks below run inside the short lease.
      const renewed = await sem.acquire()
      const held = [await sem.acquire({ ttlMs: env.ms(400), autoRenew: false }), renewed]
      expect(await sem.isLocked()).toBe(true)
      expect(await sem.tryAcquire()).toBeUndefined()
      const late = await sem.acquire({ waitMs: env.ms(3_000) })
      expect(await abortedWithin((held[0] as Lease).signal, env.ms(100))).toBeInstanceOf(LockLostError)
      await Promise.all([late.release(), held[1]?.release()])
      expect(await sem.isLocked()).toBe(false)
    },
  )

  it('multi: all-or-nothing, and opposite orders never deadlock', async () => {
    const [x, y] = [env.uniq('multi-x'), env.uniq('multi-y')]
    const l1 = env.locks()
    const l2 = env.locks()
    let inside = 0
    let rounds = 0
    const run = (locks: typeof l1, names: string[]) =>
      locks.multi(names.map((n) => locks.mutex(n))).withLock(
        async () => {
          inside++
          expect(inside).toBe(1)
          await yieldToIo()
          inside--
          rounds++
        },
        { waitMs: env.ms(10_000) },
      )
    for (let i = 0; i < 8; i++) await Promise.all([run(l1, [x, y]), run(l2, [y, x])])
    expect(rounds).toBe(16)
    const blocker = await l2.mutex(y).acquire()
    expect(await l1.multi([l1.mutex(x), l1.mutex(y)]).tryAcquire()).toBeUndefined()
    expect(await l1.mutex(x).isLocked()).toBe(false)
    await blocker.release()
    const both = await l1.multi([l1.mutex(y), l1.mutex(x)]).acquire()
    expect(await l2.mutex(x).isLocked()).toBe(true)
    await both.release()
    expect(await l2.multi([l2.mutex(x), l2.mutex(y)]).isLocked()).toBe(false)
  })

  it.skipIf(!env.capabilities().lockDelay)(
    'lock-delay: an expired, unreleased lock stays unavailable for lockDelayMs; a released one frees at once',
    async () => {
      const name = env.uniq('lockdelay')
      const locks = env.locks({ lockDelayMs: env.ms(300) })
      const started = performance.now()
      const expiring = await locks.mutex(name).acquire({ ttlMs: env.ms(100), autoRenew: false })
      // Past the TTL (the lease reports it), inside the 300 ms lock-delay that follows.
      await abortedWithin(expiring.signal, env.ms(200))
      expect(await locks.mutex(name).tryAcquire()).toBeUndefined()
      const next = await locks.mutex(name).acquire({ waitMs: env.ms(3_000) })
      expect(performance.now() - started).toBeGreaterThanOrEqual(env.ms(380))
      await next.release()
      const free = await locks.mutex(name).tryAcquire()
      expect(free).toBeDefined()
      await free?.release()
    },
  )
}
