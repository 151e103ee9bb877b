import { expect, it } from 'vitest'
import { createLocks } from '../core/locks.js'
import { LocksClosedError, NotLockHolderError } from '../errors.js'
import { countingBackend } from './counting-backend.js'
import { delay, type SuiteEnv } from './env.js'

type Case = readonly [what: string, run: () => unknown, error: typeof TypeError | typeof RangeError, mentions: string[]]

/** Bad input, extend, close. */
export function inputCases(env: SuiteEnv): void {
  it('bad input throws TypeError / RangeError naming the option and value, before any I/O', async () => {
    const { backend, calls } = countingBackend(env.backend())
    const locks = createLocks({ backend, namespace: env.namespace })
    const lock = locks.mutex('valid')
    const cases: Case[] = [
      ['empty name', () => locks.mutex(''), RangeError, ['name', '""']],
      ['number name', () => locks.mutex(42 as never), TypeError, ['name', '42']],
      ['oversized name', () => locks.mutex('x'.repeat(5_000)), RangeError, ['name', '5000']],
      ['NaN ttl', () => createLocks({ backend, ttlMs: Number.NaN }), RangeError, ['ttlMs', 'NaN']],
      ['negative wait', () => createLocks({ backend, waitMs: -1 }), RangeError, ['waitMs', '-1']],
      ['zero unavailableMs', () => createLocks({ backend, unavailableMs: 0 }), RangeError, ['unavailableMs', '0']],
      [
        'string lock-delay',
        () => createLocks({ backend, lockDelayMs: '5' as never }),
        TypeError,
        ['lockDelayMs', '"5"'],
      ],
      ['zero permits', () => locks.semaphore('s', { permits: 0 }), RangeError, ['permits', '0']],
      ['fractional permits', () => locks.semaphore('s', { permits: 1.5 }), RangeError, ['permits', '1.5']],
      ['missing backend', () => createLocks({} as never), TypeError, ['backend']],
      ['multi of nothing', () => locks.multi([]), RangeError, ['locks']],
    ]
    for (const [what, run, type, mentions] of cases) {
      let thrown: unknown
      try {
        run()
      } catch (error) {
        thrown = error
      }
      expect(thrown, what).toBeInstanceOf(type)
      for (const m of mentions) expect((thrown as Error).message, what).toContain(m)
    }
    const asyncCases: Case[] = [
      ['NaN waitMs', () => lock.acquire({ waitMs: Number.NaN }), RangeError, ['waitMs', 'NaN']],
      ['negative ttlMs', () => lock.acquire({ ttlMs: -5 }), RangeError, ['ttlMs', '-5']],
      ['NaN unavailableMs', () => lock.acquire({ unavailableMs: Number.NaN }), RangeError, ['unavailableMs', 'NaN']],
      ['ttlMs beyond a timer', () => lock.acquire({ ttlMs: 2 ** 31 }), RangeError, ['ttlMs', '2147483648']],
      ['zero ttlMs', () => lock.tryAcquire({ ttlMs: 0 }), RangeError, ['ttlMs', '0']],
      ['bad signal', () => lock.acquire({ signal: 'stop' as never }), TypeError, ['signal', '"stop"']],
      ['bad autoRenew', () => lock.acquire({ autoRenew: 1 as never }), TypeError, ['autoRenew', '1']],
      ['withLock without fn', () => lock.withLock(undefined as never), TypeError, ['fn']],
    ]
    for (const [what, run, type, mentions] of asyncCases) {
      const thrown = await Promise.resolve()
        .then(run)
        .catch((e: unknown) => e)
      expect(thrown, what).toBeInstanceOf(type)
      for (const m of mentions) expect((thrown as Error).message, what).toContain(m)
    }
    expect(calls()).toBe(0)
    const held = await lock.acquire()
    const afterAcquire = calls()
    await expect(held.extend(Number.NaN)).rejects.toBeInstanceOf(RangeError)
    expect(calls()).toBe(afterAcquire)
    await held.release()
    await locks.close()
  })

  it('namespace and name never collide: a + "b:c", "a:b" + c and "a%3Ab" + c are three locks', async () => {
    const base = `${env.namespace}-${env.uniq('ns')}`
    const pairs = [
      [base, 'b:c'],
      [`${base}:b`, 'c'],
      [`${base}%3Ab`, 'c'],
    ] as const
    const all = pairs.map(([namespace]) => createLocks({ backend: env.backend(), namespace }))
    try {
      const leases = []
      for (const [i, [, name]] of pairs.entries()) {
        const lease = await all[i]?.mutex(name).tryAcquire()
        expect(lease, `${pairs[i]?.[0]} + ${name}`).toBeDefined()
        leases.push(lease)
      }
      for (const lease of leases) await lease?.release()
    } finally {
      await Promise.all(all.map((l) => l.close()))
    }
  })

  it('a name or namespace that is not well-formed Unicode (a lone surrogate) is a TypeError before any I/O', async () => {
    const { backend, calls } = countingBackend(env.backend())
    const locks = createLocks({ backend, namespace: env.namespace })
    expect(() => locks.mutex('lone-\uD800')).toThrow(TypeError)
    expect(() => locks.mutex('lone-\uDC00-low')).toThrow(/name must be well-formed Unicode/)
    expect(() => createLocks({ backend, namespace: 'ns-\uD83D' })).toThrow(/namespace must be well-formed Unicode/)
    expect(calls()).toBe(0)
    // A well-formed pair of surrogates (one code point) is a valid name.
    const lease = await locks.mutex(`emoji-${env.uniq('\uD83D\uDD12')}`).tryAcquire()
    expect(lease).toBeDefined()
    await lease?.release()
    await locks.close()
  })

  it('extend moves the expiry; a released lease cannot be extended', async () => {
    const lease = await env
      .locks()
      .mutex(env.uniq('extend'))
      .acquire({ ttlMs: env.ms(200), autoRenew: false })
    const first = lease.expiresAt
    await lease.extend(env.ms(2_000))
    expect(lease.expiresAt).toBeGreaterThan(first + env.ms(1_000))
    // The duration under test: past the first TTL, which the extension must have replaced.
    await delay(env.ms(300))
    expect(lease.signal.aborted).toBe(false)
    await lease.release()
    await expect(lease.extend()).rejects.toBeInstanceOf(NotLockHolderError)
  })

  it('close() releases every lease, rejects pending acquires, and refuses new ones', async () => {
    const locks = env.locks()
    const name = env.uniq('close')
    const other = env.locks()
    const rwName = env.uniq('close-rw')
    const semName = env.uniq('close-sem')
    const probes = [other.mutex(name)]
    await locks.mutex(name).acquire()
    if (env.supports('read')) {
      await locks.readWrite(rwName).read.acquire()
      probes.push(other.readWrite(rwName).write)
    }
    if (env.supports('semaphore')) {
      await locks.semaphore(semName, { permits: 1 }).acquire()
      probes.push(other.semaphore(semName, { permits: 1 }))
    }
    for (const probe of probes) expect(await probe.tryAcquire()).toBeUndefined()
    const refused = env.refusedOwners(name)
    const pending = locks.mutex(name).acquire()
    // Attach the expectation now: the acquire rejects while close() is still releasing over the network.
    const pendingRejects = expect(pending).rejects.toBeInstanceOf(LocksClosedError)
    await env.waitersAsked(name, refused)
    await locks.close()
    await pendingRejects
    await expect(locks.mutex(name).acquire()).rejects.toBeInstanceOf(LocksClosedError)
    for (const probe of probes) {
      const lease = await probe.tryAcquire()
      expect(lease, probe.name).toBeDefined()
      await lease?.release()
    }
  })
}
