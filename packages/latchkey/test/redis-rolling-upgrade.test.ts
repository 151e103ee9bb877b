/**
 * A rolling upgrade of the Redis backend: processes of the previous version and of this one lock the same names at
 * once. The previous version's scripts (test/support/redis-previous/, as it sent them: every holder a field of the
 * hash M) run beside this version's backend (a plain mutex is the string M) on the shared server; the two must
 * exclude each other, and their fencing tokens must keep increasing across versions. Where the previous version
 * cannot read the string it must fail loudly (WRONGTYPE) and write nothing, never grant; scripts/free-mutex.lua
 * gives the argument.
 */
import { randomUUID } from 'node:crypto'
import { afterAll, afterEach, describe, expect, it } from 'vitest'
import { type RedisBackend, redisBackend } from '../src/backends/redis/index.js'
import { evalScript, luaScript, readLuaFile } from '../src/backends/redis/lua-script.js'
import { backendRequest as request, tokenOf } from './support/backend-request.js'
import { ioredisClient } from './support/redis-backend-module.js'

const client = ioredisClient()
const backends: RedisBackend[] = []
/** Every connection a test opened, quit after all tests (a backend never closes the client handed to it). */
const connections: ReturnType<typeof ioredisClient>[] = []
function connection() {
  const c = ioredisClient()
  connections.push(c)
  return c
}
const names: string[] = []

// The backend puts the fencing counter's idle expiry on each script's first line; 24 h is the default it used.
const previous = (file: string) =>
  luaScript(
    `previous ${file}`,
    `local FENCE_IDLE_MS = 86400000\n${readLuaFile(new URL(`./support/redis-previous/${file}.lua`, import.meta.url))}`,
  )
const OLD_ACQUIRE = previous('acquire-mutex')
const OLD_RELEASE = previous('release-mutex')
const OLD_FULL_ACQUIRE = previous('acquire')
const OLD_FULL_RELEASE = previous('release')

/** A process of the previous version, uncontended path: its short scripts on its own connection. */
function previousVersion() {
  const own = connection()
  const keys = (name: string) => {
    const m = `latchkey:{${name}}`
    return { m, fence: `${m}:fence`, expiry: `${m}:expiry`, watchers: `${m}:watchers` }
  }
  const allKeys = (m: string) => [m, m, `${m}:line`, `${m}:expiry`, `${m}:watchers`, `${m}:specs`, `${m}:fence`]
  return {
    /** The token, or undefined when the lock is held. */
    async tryAcquire(name: string, owner: string, ttlMs = 10_000): Promise<bigint | undefined> {
      const k = keys(name)
      const token = Number(await evalScript(own, OLD_ACQUIRE, [k.m, k.fence], [owner, String(ttlMs)]))
      return token === 0 ? undefined : BigInt(token)
    },
    /** The previous version's full acquire, a watcher's first try (with its process's wake channel): its raw reply. */
    acquireFull(name: string, owner: string): Promise<unknown> {
      const wake = `latchkey:wake:${randomUUID()}`
      return evalScript(own, OLD_FULL_ACQUIRE, allKeys(keys(name).m), [owner, 'mutex 10000 0 1 f 5000', wake])
    },
    /** The previous version's full release (what it ran when its short release answered 2): its raw reply. */
    releaseFull(name: string, owner: string): Promise<unknown> {
      const m = keys(name).m
      return evalScript(own, OLD_FULL_RELEASE, allKeys(m), [owner, `${m}:released`, '0', '-'])
    },
    /** 1 released, 0 not held, 2 someone waits (the previous version then ran the full release). */
    async release(name: string, owner: string): Promise<number> {
      const k = keys(name)
      return Number(await evalScript(own, OLD_RELEASE, [k.m, k.expiry, k.watchers], [owner]))
    },
  }
}

function newVersion(): RedisBackend {
  const b = redisBackend({ client: connection() }) as RedisBackend
  backends.push(b)
  return b
}

function lockName(): string {
  const name = `rolling-${randomUUID()}`
  names.push(name)
  return name
}

afterEach(async () => {
  for (const name of names.splice(0)) {
    const keys = await client.keys(`latchkey:{${name}}*`)
    if (keys.length > 0) await client.del(...keys)
  }
})
afterAll(async () => {
  for (const b of backends) await b.close()
  for (const c of connections) await c.quit()
  await client.quit()
})

describe('Redis rolling upgrade: the previous version and this one on the same mutex', () => {
  it('a lock held by the previous version is held for this one, and the tokens go on increasing', async () => {
    const old = previousVersion()
    const b = newVersion()
    const name = lockName()
    const oldOwner = randomUUID()
    const t1 = await old.tryAcquire(name, oldOwner)
    expect(t1).toBeDefined()
    const mine = request(name)
    expect(await b.tryAcquire(mine)).toMatchObject({ acquired: false })
    expect(await b.release(mine)).toBe(false)
    expect(await old.release(name, oldOwner)).toBe(1)
    const t2 = tokenOf(await b.tryAcquire(mine))
    expect(t2).toBeGreaterThan(t1 as bigint)
    expect(await b.release(mine)).toBe(true)
  })

  it('a lock held by this version is held for the previous one, and the tokens go on increasing', async () => {
    const old = previousVersion()
    const b = newVersion()
    const name = lockName()
    const mine = request(name)
    const t1 = tokenOf(await b.tryAcquire(mine))
    const oldOwner = randomUUID()
    expect(await old.tryAcquire(name, oldOwner)).toBeUndefined()
    // The previous version's owner-checked release leaves this version's lease alone (loudly: it reads a hash).
    await expect(old.release(name, oldOwner)).rejects.toThrow(/WRONGTYPE/)
    expect(await b.release(mine)).toBe(true)
    const t2 = await old.tryAcquire(name, oldOwner)
    expect(t2).toBeGreaterThan(t1)
    expect(await old.release(name, oldOwner)).toBe(1)
  })

  it("the previous version meets this one's string holder with WRONGTYPE, writing nothing, and the holder keeps it", async () => {
    const old = previousVersion()
    const b = newVersion()
    const name = lockName()
    const m = `latchkey:{${name}}`
    const mine = request(name)
    tokenOf(await b.tryAcquire(mine))
    expect(await client.type(m)).toBe('string')
    const oldOwner = randomUUID()
    // Its full acquire (a wait) and its release of a lease it lost read M as a hash: a loud error, no grant.
    await expect(old.acquireFull(name, oldOwner)).rejects.toThrow(/WRONGTYPE/)
    await expect(old.releaseFull(name, oldOwner)).rejects.toThrow(/WRONGTYPE/)
    expect(await client.exists(`${m}:watchers`, `${m}:specs`)).toBe(0)
    expect(await old.tryAcquire(name, oldOwner)).toBeUndefined()
    expect(await b.release(mine)).toBe(true)
    expect(await client.exists(m)).toBe(0)
  })

  it("a previous version's release hands the lock to a watcher of this version as a hash field, which this one releases", async () => {
    const old = previousVersion()
    const b = newVersion()
    const name = lockName()
    const m = `latchkey:{${name}}`
    const oldOwner = randomUUID()
    const t1 = (await old.tryAcquire(name, oldOwner)) as bigint
    expect(t1).toBeDefined()
    const mine = request(name)
    const sub = b.subscribe(mine)
    try {
      expect(await b.tryAcquire(mine)).toMatchObject({ acquired: false })
      expect(await old.release(name, oldOwner)).toBe(2)
      expect(await old.releaseFull(name, oldOwner)).toBe(1)
      expect(await client.type(m)).toBe('hash')
      await sub.wait(5_000)
      expect(tokenOf(await b.tryAcquire(mine))).toBeGreaterThan(t1)
      // Held as the previous version wrote it: both versions see it taken.
      expect(await old.tryAcquire(name, randomUUID())).toBeUndefined()
      expect(await b.tryAcquire(request(name))).toMatchObject({ acquired: false })
      expect(await b.renew({ ...mine, ttlMs: 20_000 })).toBe(true)
      expect(await b.release(mine)).toBe(true)
      expect(await client.exists(m)).toBe(0)
    } finally {
      sub.close()
    }
  })

  it('a hash grant the previous version wrote for an owner is renewed and released by this version, short path first', async () => {
    const old = previousVersion()
    const b = newVersion()
    const name = lockName()
    const m = `latchkey:{${name}}`
    // The record as the previous version wrote it, for an owner this process then releases (as after a handoff).
    const mine = request(name)
    expect(await old.tryAcquire(name, mine.owner)).toBeDefined()
    expect(await client.type(m)).toBe('hash')
    expect(await b.renew({ ...mine, ttlMs: 20_000 })).toBe(true)
    expect(await client.type(m)).toBe('hash')
    // This process never saw the lock contended: release-mutex.lua meets the hash and leaves it to release.lua.
    expect(await b.release(mine)).toBe(true)
    expect(await client.exists(m)).toBe(0)
  })

  it("this version's release hands the lock to a previous version's watcher in the hash, which that version releases", async () => {
    const old = previousVersion()
    const b = newVersion()
    const name = lockName()
    const m = `latchkey:{${name}}`
    // The previous version's watcher registered while a holder of its own version held the lock (as a hash).
    const first = randomUUID()
    expect(await old.tryAcquire(name, first)).toBeDefined()
    const mine = request(name)
    const sub = b.subscribe(mine)
    const waiter = randomUUID()
    try {
      expect(await b.tryAcquire(mine)).toMatchObject({ acquired: false })
      expect(String(await old.acquireFull(name, waiter))).toMatch(/^0 /)
      expect(await old.releaseFull(name, first)).toBe(1)
      await sub.wait(5_000)
      tokenOf(await b.tryAcquire(mine))
      // This version's release grants the oldest watcher: one of the previous version, so a hash record it can read.
      expect(await b.release(mine)).toBe(true)
      expect(await client.type(m)).toBe('hash')
      expect(await client.hexists(m, waiter)).toBe(1)
      expect(await old.release(name, waiter)).toBe(1)
      expect(await client.exists(m)).toBe(0)
    } finally {
      sub.close()
    }
  })

  it('processes of both versions taking turns on one lock never hold it at the same time', async () => {
    const olds = [previousVersion(), previousVersion()]
    const news = [newVersion(), newVersion()]
    const name = lockName()
    let holders = 0
    let most = 0
    let lastToken = 0n
    const turns = 40
    const hold = async (token: bigint) => {
      holders++
      most = Math.max(most, holders)
      expect(token).toBeGreaterThan(lastToken)
      lastToken = token
      // Another task's try runs meanwhile: the holder keeps the lock across a round trip to Redis.
      await client.ping()
      holders--
    }
    const oldTask = async (old: ReturnType<typeof previousVersion>) => {
      for (let done = 0; done < turns; ) {
        const owner = randomUUID()
        const token = await old.tryAcquire(name, owner)
        if (token === undefined) continue
        await hold(token)
        expect(await old.release(name, owner)).toBe(1)
        done++
      }
    }
    const newTask = async (b: RedisBackend) => {
      for (let done = 0; done < turns; ) {
        const r = request(name)
        const result = await b.tryAcquire(r)
        if (!result.acquired) continue
        await hold(result.token)
        expect(await b.release(r)).toBe(true)
        done++
      }
    }
    await Promise.all([...olds.map(oldTask), ...news.map(newTask)])
    expect(most).toBe(1)
  })
})
