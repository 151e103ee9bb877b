import { expect, it } from 'vitest'
import type { HolderInfo, LockInspection } from '../backend/inspection.js'
import type { Lease } from '../core/lease.js'
import { LockLostError } from '../errors.js'
import { abortedWithin, type SuiteEnv } from './env.js'
import { eventually } from './eventually.js'

/** The operator calls: `Locks.inspect`, `Locks.list`, `Locks.forceRelease` (skipped where `capabilities.inspect` is false). */
export function operatorCases(env: SuiteEnv): void {
  const can = () => env.capabilities().inspect

  /** Checks what every backend must report of a holder of `lease`; what it may omit is checked where present. */
  const expectHolder = (holder: HolderInfo | undefined, lease: Lease, kind: HolderInfo['kind']) => {
    expect(holder?.kind).toBe(kind)
    // Redisson-style owners carry a thread suffix: `<owner>:<thread>`.
    expect(holder?.owner === lease.owner || holder?.owner.startsWith(`${lease.owner}:`)).toBe(true)
    if (env.capabilities().fencing === 'native') expect(holder?.token).toBe(lease.token)
    if (holder?.expiresAt !== undefined) expect(holder.expiresAt).toBeGreaterThan(Date.now() - 1_000)
    if (holder?.count !== undefined) expect(holder.count).toBe(1)
  }
  const holderOf = (state: LockInspection, lease: Lease) =>
    state.holders.find((h) => h.owner === lease.owner || h.owner.startsWith(`${lease.owner}:`))

  it.skipIf(!can())('inspect: a free lock has no holders and no waiters; a mutex holder is listed', async () => {
    const name = env.uniq('op-mutex')
    const locks = env.locks()
    expect(await locks.inspect(name)).toEqual({ name, kind: undefined, holders: [], waiters: [] })
    const lease = await locks.mutex(name).acquire({ ttlMs: env.ms(5_000) })
    const state = await locks.inspect(name)
    expect(state.name).toBe(name)
    expect(state.kind).toBe('mutex')
    expect(state.holders).toHaveLength(1)
    expectHolder(state.holders[0], lease, 'mutex')
    await lease.release()
    expect((await locks.inspect(name)).holders).toEqual([])
    // Re-entering is counted in this process, never as a second holder.
    await locks.mutex(name).withLock(async (outer) => {
      await locks.mutex(name).withLock(async () => {
        const nested = await locks.inspect(name)
        expect(nested.holders).toHaveLength(1)
        expectHolder(nested.holders[0], outer, 'mutex')
      })
    })
  })

  it.skipIf(!can() || !env.supports('read') || !env.supports('write'))(
    'inspect: readers are listed as read holders, a waiting writer as a waiter where the backend keeps waiters',
    async () => {
      const name = env.uniq('op-rw')
      const locks = env.locks()
      const { read, write } = locks.readWrite(name)
      const [r1, r2] = [await read.acquire(), await read.acquire()]
      const asked = env.refusedOwners(name)
      const writer = write.acquire({ waitMs: env.ms(10_000) })
      await env.waitersAsked(name, asked)
      const state = await locks.inspect(name)
      expect(state.kind).toBe('read')
      expect(state.holders).toHaveLength(2)
      expectHolder(holderOf(state, r1), r1, 'read')
      expectHolder(holderOf(state, r2), r2, 'read')
      if (env.capabilities().waiters !== 'none') {
        expect(state.waiters.map((w) => w.kind)).toEqual(['write'])
        if (state.waiters[0]?.since !== undefined)
          expect(state.waiters[0].since).toBeLessThanOrEqual(Date.now() + 1_000)
      }
      await Promise.all([r1.release(), r2.release()])
      const w = await writer
      const after = await locks.inspect(name)
      expect(after.kind).toBe('write')
      expectHolder(after.holders[0], w, 'write')
      expect(after.waiters).toEqual([])
      await w.release()
    },
  )

  it.skipIf(!can() || !env.supports('semaphore'))('inspect: semaphore holders with their permit count', async () => {
    const name = env.uniq('op-sem')
    const locks = env.locks()
    const sem = locks.semaphore(name, { permits: 3 })
    const held = [await sem.acquire(), await sem.acquire()]
    const state = await locks.inspect(name)
    expect(state.kind).toBe('semaphore')
    expect(state.holders).toHaveLength(2)
    for (const lease of held) {
      const holder = holderOf(state, lease)
      expectHolder(holder, lease, 'semaphore')
      if (holder?.permits !== undefined) expect(holder.permits).toBe(3)
    }
    await Promise.all(held.map((l) => l.release()))
  })

  it.skipIf(!can() || env.capabilities().waiters !== 'all')(
    'inspect: a waiting mutex acquire is listed as a waiter where the backend stores every waiter',
    async () => {
      const name = env.uniq('op-waiter')
      const locks = env.locks()
      const holder = await locks.mutex(name).acquire()
      const asked = env.refusedOwners(name)
      const waiting = locks.mutex(name).acquire({ waitMs: env.ms(10_000) })
      await env.waitersAsked(name, asked)
      await eventually('the waiter is stored', async () => (await locks.inspect(name)).waiters.length === 1)
      expect((await locks.inspect(name)).waiters[0]?.kind).toBe('mutex')
      await holder.release()
      await (await waiting).release()
    },
  )

  it.skipIf(!env.capabilities().list)(
    'list: the held locks of the namespace starting with a prefix, at most limit',
    async () => {
      const prefix = env.uniq('op-list')
      const locks = env.locks()
      const leases = [
        await locks.mutex(`${prefix}:a`).acquire(),
        await locks.mutex(`${prefix}:b`).acquire(),
        await locks.mutex(`${prefix}:c`).acquire(),
      ]
      const other = await locks.mutex(`${env.uniq('op-other')}`).acquire()
      const all = await locks.list({ prefix })
      expect(all.map((s) => s.name)).toEqual([`${prefix}:a`, `${prefix}:b`, `${prefix}:c`])
      expect(all[0]).toMatchObject({ kind: 'mutex', holders: 1, waiters: 0 })
      expect(await locks.list({ prefix, limit: 2 })).toHaveLength(2)
      await leases[1]?.release()
      expect((await locks.list({ prefix })).map((s) => s.name)).toEqual([`${prefix}:a`, `${prefix}:c`])
      await Promise.all([...leases.map((l) => l.release().catch(() => undefined)), other.release()])
      expect(await locks.list({ prefix })).toEqual([])
    },
  )

  it.skipIf(!can())(
    "forceRelease: the holder's signal aborts with LockLostError and a waiter gets the lock",
    async () => {
      const name = env.uniq('op-force')
      const admin = env.locks()
      const holderLocks = env.locks()
      const waiterLocks = env.locks()
      const ttl = env.ms(400)
      const lease = await holderLocks.mutex(name).acquire({ ttlMs: ttl })
      const asked = env.refusedOwners(name)
      const waiting = waiterLocks.mutex(name).acquire({ waitMs: env.ms(10_000), ttlMs: env.ms(5_000) })
      await env.waitersAsked(name, asked)
      expect(await admin.forceRelease(name)).toBe(true)
      expect(await abortedWithin(lease.signal, ttl + env.ms(1_000))).toBeInstanceOf(LockLostError)
      const next = await waiting
      const state = await admin.inspect(name)
      expect(state.holders).toHaveLength(1)
      expectHolder(state.holders[0], next, 'mutex')
      await next.release()
      expect(await admin.forceRelease(name)).toBe(false)
    },
  )
}
