import { expect, it } from 'vitest'
import type { Lease } from '../core/lease.js'
import { PermitsMismatchError } from '../errors.js'
import type { SuiteEnv } from './env.js'

/** The rejection of `promise`, or a failure when it fulfils. */
async function rejection(promise: Promise<unknown>): Promise<unknown> {
  return promise.then(
    (value) => {
      throw new Error(`expected a rejection, got ${String(value)}`)
    },
    (error: unknown) => error,
  )
}

function expectMismatch(error: unknown, name: string, asked: number, inForce: number): void {
  expect(error).toBeInstanceOf(PermitsMismatchError)
  const e = error as PermitsMismatchError
  expect(e.code).toBe('PERMITS_MISMATCH')
  expect(e.retryable).toBe(false)
  expect([e.permits, e.permitsInForce]).toEqual([asked, inForce])
  expect(e.message).toContain(name)
  expect(e.message).toContain(`permits ${asked}`)
  expect(e.message).toContain(`permits ${inForce}`)
}

/** Semaphore permit counts: one count per semaphore while it is in use; huge counts cost nothing. */
export function semaphoreCases(env: SuiteEnv): void {
  it.skipIf(!env.supports('semaphore'))(
    'semaphore permits: another count than the one in force rejects with PermitsMismatchError; idle, it is defined again',
    async () => {
      const name = env.uniq('sem-permits')
      const one = () => env.locks().semaphore(name, { permits: 1 })
      const five = env.locks().semaphore(name, { permits: 5 })
      const held = await one().acquire()
      expectMismatch(await rejection(five.tryAcquire()), name, 5, 1)
      expectMismatch(await rejection(five.acquire({ waitMs: env.ms(3_000) })), name, 5, 1)
      // A waiter with the count in force waits as usual and gets in once the holder leaves.
      const waiting = one().acquire({ waitMs: env.ms(5_000) })
      expectMismatch(await rejection(five.tryAcquire()), name, 5, 1)
      await held.release()
      const next = await waiting
      expectMismatch(await rejection(five.tryAcquire()), name, 5, 1)
      await next.release()
      // Idle again: the next acquirer defines the count, and the old one is now the mismatch.
      const wide = await five.acquire({ waitMs: env.ms(3_000) })
      const second = await five.tryAcquire()
      expect(second).toBeDefined()
      expectMismatch(await rejection(one().tryAcquire()), name, 1, 5)
      await Promise.all([wide.release(), second?.release()])
      const back = await one().tryAcquire()
      expect(back).toBeDefined()
      await back?.release()
    },
  )

  it.skipIf(!env.supports('semaphore'))(
    'semaphore permits: two first acquirers racing with different counts never both win',
    async () => {
      for (let round = 0; round < 6; round++) {
        const name = env.uniq('sem-race')
        const outcomes = await Promise.allSettled([
          env.locks().semaphore(name, { permits: 1 }).tryAcquire(),
          env.locks().semaphore(name, { permits: 5 }).tryAcquire(),
        ])
        const won = outcomes.filter((o) => o.status === 'fulfilled' && o.value !== undefined)
        const lost = outcomes.filter((o) => o.status === 'rejected')
        expect(won).toHaveLength(1)
        expect(lost).toHaveLength(1)
        expect((lost[0] as PromiseRejectedResult).reason).toBeInstanceOf(PermitsMismatchError)
        await ((won[0] as PromiseFulfilledResult<Lease>).value as Lease).release()
      }
    },
  )

  it.skipIf(!env.supports('semaphore'))(
    'semaphore permits: a huge count (2^31 - 1, MAX_SAFE_INTEGER) is accepted in bounded memory, or refused with RangeError before I/O',
    async () => {
      for (const permits of [2 ** 31 - 1, Number.MAX_SAFE_INTEGER]) {
        const name = env.uniq('sem-huge')
        const sem = env.locks().semaphore(name, { permits })
        const heapBefore = process.memoryUsage().heapUsed
        let leases: (Lease | undefined)[]
        try {
          leases = [await sem.acquire({ waitMs: env.ms(5_000) }), await sem.tryAcquire()]
        } catch (error) {
          // A backend that caps permits must say so before any I/O, naming the option.
          expect(error).toBeInstanceOf(RangeError)
          expect((error as Error).message).toContain('permits')
          continue
        }
        expect(process.memoryUsage().heapUsed - heapBefore).toBeLessThan(50 * 1024 * 1024)
        expect(leases.every((l) => l !== undefined)).toBe(true)
        expect(await sem.isLocked()).toBe(false)
        // The count is recorded exactly: one less is another count.
        const near = env.locks().semaphore(name, { permits: permits - 1 })
        expectMismatch(await rejection(near.tryAcquire()), name, permits - 1, permits)
        await Promise.all(leases.map((l) => l?.release()))
      }
    },
  )
}
