/**
 * The operator calls on a Redisson-shared lock: a holder written the way Redisson's RLock writes it (the hash
 * `<name>`, field `<uuid>:<threadId>` -> hold count, a TTL) is a Java service holding the lock. `inspect` shows
 * it with its hold count and the hash's TTL, `list` finds it, and `forceRelease` removes it as Redisson's
 * `forceUnlock` would.
 */
import { randomUUID } from 'node:crypto'
import { afterAll, describe, expect, it } from 'vitest'
import { redisBackend } from '../src/backends/redis/index.js'
import { createLocks } from '../src/core/locks.js'
import { deleteKeys, ioredisClient } from './support/redis-backend-module.js'

const client = ioredisClient()
const prefix = `lkop-${randomUUID().slice(0, 8)}`

afterAll(async () => {
  await deleteKeys(prefix)
  await client.quit()
})

describe('operator calls, redisson layout', () => {
  it('a Redisson holder is inspected with its hold count and TTL, listed, and force-released', async () => {
    const backend = redisBackend({ client, layout: 'redisson' })
    const locks = createLocks({ backend })
    const name = `${prefix}:javajob`
    const javaOwner = `${randomUUID()}:1`
    await client.hset(name, javaOwner, '2')
    await client.pexpire(name, 30_000)
    try {
      const state = await locks.inspect(name)
      expect(state.kind).toBe('mutex')
      expect(state.holders).toHaveLength(1)
      const [holder] = state.holders
      expect(holder).toMatchObject({ owner: javaOwner, kind: 'mutex', count: 2 })
      expect(holder?.token).toBeUndefined()
      expect(holder?.expiresAt).toBeGreaterThan(Date.now() + 20_000)
      expect(holder?.expiresAt).toBeLessThanOrEqual(Date.now() + 31_000)
      expect(await locks.mutex(name).tryAcquire()).toBeUndefined()
      expect(await locks.list({ prefix })).toEqual([{ name, kind: 'mutex', holders: 1, waiters: 0 }])
      expect(await locks.forceRelease(name)).toBe(true)
      expect(await client.exists(name)).toBe(0)
      expect((await locks.inspect(name)).holders).toEqual([])
      const lease = await locks.mutex(name).acquire()
      const mine = await locks.inspect(name)
      // latchkey's own holder in Redisson's hash: field `<owner>:<thread>`, count 1, with a token.
      expect(mine.holders).toHaveLength(1)
      expect(mine.holders[0]?.owner.startsWith(`${lease.owner}:`)).toBe(true)
      expect(mine.holders[0]).toMatchObject({ kind: 'mutex', count: 1, token: lease.token })
      await lease.release()
    } finally {
      await locks.close()
      await backend.close()
    }
  })
})
