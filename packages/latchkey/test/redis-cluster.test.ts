/**
 * Redis Cluster: every key of one lock in one slot, checked by computation (CRC16), against CLUSTER KEYSLOT,
 * and by running every primitive on a one-node cluster, which rejects scripts whose keys span slots.
 */
import { Cluster } from 'ioredis'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { LockKind } from '../src/backend/types.js'
import { keySlot, latchkeyLayout, redisBackend, redissonLayout } from '../src/backends/redis/index.js'
import { createLocks } from '../src/core/locks.js'
import { eventually } from './support/eventually.js'
import { ioredisClient } from './support/redis-backend-module.js'
import { type RedisServerProcess, startRedisServer } from './support/redis-server-process.js'

const NAMES = ['order:42', 'a{b}c', '{x}', 'x}y', '}', '{}', 'ünïcödé 🔒', '%7B', 'a{', '']
const KINDS: LockKind[] = ['mutex', 'fair', 'read', 'write', 'semaphore']

function slotsOf(layout: typeof latchkeyLayout, key: string): Set<number> {
  const slots = new Set<number>()
  for (const kind of KINDS) {
    const keys = layout.keysOf({ key, kind })
    for (const k of [...keys.keys, keys.channel]) slots.add(keySlot(k))
  }
  return slots
}

describe('Redis Cluster key slots', () => {
  it('keySlot follows CRC16/XMODEM and hash tags', () => {
    expect(keySlot('123456789')).toBe(0x31c3)
    expect(keySlot('foo')).toBe(12182)
    expect(keySlot('{user1000}.following')).toBe(keySlot('{user1000}.followers'))
    expect(keySlot('foo{}{bar}')).toBe(keySlot('foo{}{bar}'))
    expect(keySlot('foo{}{bar}')).not.toBe(keySlot('bar'))
    expect(keySlot('foo{{bar}}zap')).toBe(keySlot('{bar'))
  })

  it('every key and channel of one lock (all kinds) lands in one slot, whatever the name', () => {
    for (const name of NAMES) expect(slotsOf(latchkeyLayout, `ns:${name}`).size, name).toBe(1)
    for (const name of NAMES) expect(slotsOf(latchkeyLayout, name).size, name).toBe(1)
    // Redisson's layout hashes `<name>` whole unless it has a tag: fine for every name without a lone `}`.
    for (const name of ['order:42', 'a{b}c', '{x}', 'ünïcödé 🔒', '%7B']) {
      expect(slotsOf(redissonLayout, `ns:${name}`).size, name).toBe(1)
    }
  })

  describe('on a one-node cluster', () => {
    let server: RedisServerProcess
    let cluster: Cluster
    beforeAll(async () => {
      server = await startRedisServer([
        '--cluster-enabled',
        'yes',
        '--cluster-config-file',
        'nodes.conf',
        '--cluster-announce-ip',
        '127.0.0.1',
      ])
      const admin = ioredisClient(server.url)
      await admin.call('CLUSTER', 'ADDSLOTSRANGE', '0', '16383')
      await eventually(
        'the cluster is ok',
        async () => /cluster_state:ok/.test(String(await admin.call('CLUSTER', 'INFO'))),
        5_000,
        50,
      )
      for (const layout of [latchkeyLayout, redissonLayout]) {
        for (const kind of KINDS) {
          const keys = layout.keysOf({ key: 'ns:a{b}c', kind })
          for (const k of keys.keys) expect(Number(await admin.call('CLUSTER', 'KEYSLOT', k)), k).toBe(keySlot(k))
        }
      }
      await admin.quit()
      cluster = new Cluster([{ host: '127.0.0.1', port: server.port }])
      cluster.on('error', () => undefined)
    })
    afterAll(async () => {
      await cluster?.quit()
      await server?.dispose()
    })

    it.each(['latchkey', 'redisson'] as const)('runs every primitive without CROSSSLOT (layout %s)', async (layout) => {
      const keyLayout = layout === 'latchkey' ? latchkeyLayout : redissonLayout
      // A waiter of the line (fair, write) has taken its place: the line's zset holds it.
      const inLine = (name: string, kind: 'fair' | 'write') =>
        eventually(`the ${kind} waiter of ${name} stands in line`, async () => {
          return (await cluster.zcard(keyLayout.keysOf({ key: `ns:${name}`, kind }).keys[2])) === 1
        })
      const backend = redisBackend({ client: cluster, layout })
      const locks = createLocks({ backend, namespace: 'ns' })
      try {
        for (const name of layout === 'latchkey'
          ? NAMES.filter((n) => n !== '')
          : ['order:42', 'a{b}c', 'ünïcödé 🔒']) {
          const m = await locks.mutex(name).acquire({ ttlMs: 5_000 })
          expect(await locks.mutex(name).isLocked()).toBe(true)
          await m.extend()
          const waiter = locks.fairMutex(name).acquire({ waitMs: 5_000 })
          await inLine(name, 'fair')
          await m.release()
          await (await waiter).release()
          const rw = locks.readWrite(name)
          const r = await rw.read.acquire()
          const w = rw.write.acquire({ waitMs: 5_000 })
          await inLine(name, 'write')
          await r.release()
          await (await w).release()
          const s = await locks.semaphore(name, { permits: 2 }).acquire()
          await s.release()
          await backend.forceRelease({ key: `ns:${name}`, kind: 'mutex' })
        }
      } finally {
        await locks.close()
        await backend.close()
      }
    })
  })
})
