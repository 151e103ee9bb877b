import { fileURLToPath } from 'node:url'
import { Etcd3 } from 'etcd3'
import { afterAll, describe, expect, it } from 'vitest'
import type { AcquireRequest, LockRef } from '../src/backend/types.js'
import { type EtcdClient, openEtcdClient } from '../src/backends/etcd/etcd-client.js'
import { GoMutexLayout } from '../src/backends/etcd/go-mutex-layout.js'
import { etcdBackend, parseEtcdUrl } from '../src/backends/etcd/index.js'
import { KeyLayout } from '../src/backends/etcd/keys.js'
import { createLocks } from '../src/core/locks.js'
import { BackendUnavailableError } from '../src/errors.js'
import { describeBackendConformance } from '../src/testing/index.js'
import { ETCD_URL } from './support/etcd-backend-module.js'
import { eventually } from './support/eventually.js'

const admin = new Etcd3({ hosts: ETCD_URL })
afterAll(() => admin.close())

/** Deletes every key of lock names starting with `namespace`, in both layouts. */
async function cleanup(namespace: string): Promise<void> {
  for (const layout of [new KeyLayout('latchkey'), new GoMutexLayout(undefined)]) {
    const range = layout.namesRange(namespace)
    await admin.kv.deleteRange({ key: range.start, range_end: range.end })
  }
}

const module = fileURLToPath(new URL('./support/etcd-backend-module.ts', import.meta.url))

describeBackendConformance('etcd', () => etcdBackend({ hosts: ETCD_URL }), {
  processBackend: { module },
  cleanup,
  // Every etcd write is a raft commit with an fsync (several ms on a busy 2-core VM), so the suite's 10 ms
  // holds and 120 ms leases get three times the room; server-side expiry is whole seconds anyway. (Twice was too
  // little with two test files running at once: a waiter's re-try sent as its 300 ms wait ended was still
  // unanswered at the deadline, which the core reports as the backend's silence, not as a timeout.)
  timeScale: 3,
})

// Go's concurrency.Mutex layout (etcdctl lock): every kind, the same contract; interop with Go in etcd-interop.test.ts.
describeBackendConformance('etcd (etcd layout)', () => etcdBackend({ hosts: ETCD_URL, layout: 'etcd' }), {
  processBackend: { module, export: 'createEtcdLayoutBackend' },
  cleanup,
  timeScale: 3,
})

describe('etcd backend specifics', () => {
  it('an unreachable etcd rejects with BackendUnavailableError, not a hang', async () => {
    const backend = etcdBackend({ hosts: 'http://127.0.0.1:1', callTimeoutMs: 500 })
    const locks = createLocks({ backend, namespace: 'lk-unreachable' })
    try {
      await expect(locks.mutex('x').tryAcquire()).rejects.toBeInstanceOf(BackendUnavailableError)
      await expect(locks.mutex('x').isLocked()).rejects.toBeInstanceOf(BackendUnavailableError)
    } finally {
      await locks.close()
      await backend.close()
    }
  })

  it('keys follow <prefix>/<name>/<kind>/<lease hex>-<owner>; the token is the key create revision', async () => {
    const namespace = `lk-layout-${process.pid}`
    const backend = etcdBackend({ hosts: ETCD_URL })
    const locks = createLocks({ backend, namespace })
    try {
      const lease = await locks.mutex('a/b').acquire({ ttlMs: 2_000 })
      const range = backend.layout.namesRange(namespace)
      const res = await admin.kv.range({ key: range.start, range_end: range.end })
      expect(res.kvs).toHaveLength(1)
      const kv = res.kvs[0]
      expect(kv?.key.toString()).toMatch(new RegExp(`^latchkey/${namespace}%3Aa%2Fb/mutex/[0-9a-f]+-[0-9a-f-]+$`))
      expect(BigInt(kv?.create_revision ?? -1)).toBe(lease.token)
      const guard = await backend.holderGuard({ key: `${namespace}:a/b`, kind: 'mutex', token: lease.token })
      expect(guard.key).toBe(kv?.key.toString())
      await lease.release()
      expect((await admin.kv.range({ key: range.start, range_end: range.end })).kvs).toHaveLength(0)
    } finally {
      await locks.close()
      await backend.close()
      await cleanup(namespace)
    }
  })

  it('a queued fair waiter wakes only when the key just before it goes (Go waitDeletes)', async () => {
    const namespace = `lk-line-${process.pid}`
    const backend = etcdBackend({ hosts: ETCD_URL })
    const key = `${namespace}:line`
    const base = {
      key,
      kind: 'fair',
      ttlMs: 5_000,
      permits: 1,
      lockDelayMs: 0,
      queue: true,
      queueTtlMs: 5_000,
    } as const
    const request = (owner: string, queue = true): AcquireRequest => ({ ...base, owner, queue })
    const owners = ['w1', 'w2', 'w3']
    const subs = owners.map((owner) => backend.subscribe({ key, kind: 'fair', owner } as LockRef))
    try {
      expect((await backend.tryAcquire(request('holder', false))).acquired).toBe(true)
      for (const owner of owners) expect((await backend.tryAcquire(request(owner))).acquired).toBe(false)
      // Drain the wake every subscription gets once its watch is (re)connected.
      await Promise.all(subs.map((sub) => sub.wait(300)))
      const started = performance.now()
      const woke = subs.map((sub) => sub.wait(1_500).then(() => performance.now() - started))
      expect(await backend.release({ key, kind: 'fair', owner: 'holder' })).toBe(true)
      const [first, second, third] = await Promise.all(woke)
      expect(first).toBeLessThan(1_000)
      expect(second).toBeGreaterThanOrEqual(1_400)
      expect(third).toBeGreaterThanOrEqual(1_400)
      const granted = await backend.tryAcquire(request('w1'))
      expect(granted.acquired).toBe(true)
      expect((await backend.tryAcquire(request('w2'))).acquired).toBe(false)
      await backend.release({ key, kind: 'fair', owner: 'w1' })
    } finally {
      for (const sub of subs) sub.close()
      for (const owner of owners) await backend.leaveQueue({ key, kind: 'fair', owner })
      await backend.close()
      await cleanup(namespace)
    }
  })

  it('waiting mutex acquires of one process take turns, oldest first: only the first asks etcd, and a release puts the next in line', async () => {
    let txns = 0
    await withCountingClient(
      `lk-mline-${process.pid}`,
      (inner) =>
        withKv(inner, {
          txn: (request) => {
            txns++
            return inner.kv.txn(request)
          },
        }),
      async (locks) => {
        const holder = await locks.mutex('m').acquire()
        const before = txns
        const order: number[] = []
        const waiters = Array.from({ length: 5 }, (_, i) =>
          locks
            .mutex('m')
            .acquire({ waitMs: 10_000 })
            .then(async (lease) => {
              order.push(i)
              const token = lease.token
              await lease.release()
              return token
            }),
        )
        await holder.release()
        const tokens = await Promise.all(waiters)
        expect(order).toEqual([0, 1, 2, 3, 4])
        expect(tokens.every((t, i) => t > (i === 0 ? holder.token : (tokens[i - 1] as bigint)))).toBe(true)
        // The holder's delete, the first waiter's own try if it ran after that delete, then per waiter one txn: its
        // release, which also puts the next waiter's key in line. A join and a release per waiter were 11; every
        // waiter trying on every release was 16 or more.
        expect(txns - before).toBeLessThanOrEqual(2 + 5)
      },
    )
  })

  it('a release that the next waiter of its process joins the line with sends the txn built and encoded during the hold', async () => {
    let built = 0
    let sentPrepared = 0
    let builtAtRelease = 0
    await withCountingClient(
      `lk-mprep-${process.pid}`,
      (inner) =>
        withKv(inner, {
          txn: (request) => {
            const joins = request.success?.some((op) => op.request_txn !== undefined) === true
            if (joins && request.success?.[0]?.request_delete_range !== undefined) builtAtRelease++
            return inner.kv.txn(request)
          },
          prepareTxn: (request) => {
            built++
            const send = (inner.kv.prepareTxn as NonNullable<EtcdClient['kv']['prepareTxn']>)(request)
            return () => {
              sentPrepared++
              return send()
            }
          },
        }),
      async (locks) => {
        const holder = await locks.mutex('m').acquire()
        const order: number[] = []
        const waiters = Array.from({ length: 3 }, (_, i) =>
          locks
            .mutex('m')
            .acquire({ waitMs: 10_000 })
            .then(async (lease) => {
              order.push(i)
              // Held until the txn of its release, with which the next waiter joins the line, is built (no waiter
              // is behind the last one: it releases with a plain delete).
              if (i < 2) await eventually(`release txn ${i + 2} built`, () => built === i + 2)
              await lease.release()
            }),
        )
        // The first waiter found the holder of its process and waits for its release to join the line.
        await eventually("the holder's release txn built", () => built === 1)
        await holder.release()
        await Promise.all(waiters)
        expect(order).toEqual([0, 1, 2])
        expect(sentPrepared).toBe(3)
        expect(builtAtRelease).toBe(0)
      },
    )
  })

  it('a waiter that waits for the release of a holder of its process joins by itself when that holder is force-released', async () => {
    const namespace = `lk-mforce-${process.pid}`
    const backend = etcdBackend({ hosts: ETCD_URL })
    const locks = createLocks({ backend, namespace, ttlMs: 30_000 })
    try {
      const holder = await locks.mutex('m').acquire({ waitMs: 1_000 })
      const waiter = locks.mutex('m').acquire({ waitMs: 5_000 })
      // Its first try has seen the local holder (it waits for that release) once it is subscribed and has tried.
      await new Promise((resolve) => setImmediate(resolve))
      expect(await backend.forceRelease({ key: `${namespace}:m`, kind: 'mutex' })).toBe(true)
      // Not the holder's release (never called here), nor its 30 s lease: the delete event sends the waiter in.
      const lease = await waiter
      expect(lease.token).toBeGreaterThan(holder.token)
      await lease.release()
    } finally {
      await locks.close()
      await backend.close()
      await cleanup(namespace)
    }
  })

  it('a waiter next in line whose lease was just refreshed (or granted) is granted without a keepalive', async () => {
    let keepalives = 0
    await withCountingClient(
      `lk-mfresh-${process.pid}`,
      (inner) => ({
        ...inner,
        leaseClient: {
          ...inner.leaseClient,
          leaseKeepAlive: async () => {
            const stream = await inner.leaseClient.leaseKeepAlive()
            return {
              on: (event: never, listener: never) => stream.on(event, listener),
              write: (request: { ID: string }) => {
                keepalives++
                return stream.write(request)
              },
              end: () => stream.end(),
            }
          },
        },
        watch: () => inner.watch(),
        close: () => inner.close(),
      }),
      async (locks) => {
        const holder = await locks.mutex('m').acquire()
        const waiters = Array.from({ length: 5 }, () =>
          locks
            .mutex('m')
            .acquire({ waitMs: 10_000 })
            .then((lease) => lease.release()),
        )
        // Every waiter's place goes in line on a lease just granted or refreshed, and waits a few ms at most.
        const before = keepalives
        await holder.release()
        await Promise.all(waiters)
        // One keepalive per handoff (sent when one key was left before the place) was 5 here.
        expect(keepalives - before).toBeLessThanOrEqual(1)
      },
    )
  })

  it('semaphore slot keys name the permit count; the txn guard covers every other count and none of ours', () => {
    const layout = new KeyLayout('latchkey')
    const ref = { key: 'ns:sem', kind: 'semaphore' } as const
    const inside = (key: string, r: { start: Buffer; end: Buffer }) =>
      Buffer.compare(Buffer.from(key), r.start) >= 0 && Buffer.compare(Buffer.from(key), r.end) < 0
    const guarded = (key: string) => layout.otherCountRanges(ref, 1).some((r) => inside(key, r))
    expect(layout.slotKey(ref, 1, 0)).toBe('latchkey/ns%3Asem/semaphore/1.0')
    expect(layout.parse(layout.slotKey(ref, 10, 7))).toMatchObject({ kind: 'semaphore', slot: 7, permits: 10 })
    expect(guarded(layout.slotKey(ref, 1, 0))).toBe(false)
    expect(guarded(layout.slotKey(ref, 1, 2 ** 31 - 2))).toBe(false)
    for (const other of [10, 11, 2, 5, 100, 2 ** 31 - 1]) expect(guarded(layout.slotKey(ref, other, 0))).toBe(true)
    expect(guarded('latchkey/ns%3Asem/semaphore/3')).toBe(true) // a slot of a version that did not name the count
    expect(guarded('latchkey/ns%3Asem/mutex/1-x')).toBe(false)
  })

  it('a semaphore of 2^31 - 1 permits acquires with work bounded by its holders, not its permits', async () => {
    const namespace = `lk-huge-${process.pid}`
    const backend = etcdBackend({ hosts: ETCD_URL })
    const locks = createLocks({ backend, namespace })
    try {
      const sem = locks.semaphore('big', { permits: 2 ** 31 - 1 })
      const heapBefore = process.memoryUsage().heapUsed
      const leases = [await sem.acquire({ ttlMs: 5_000 }), await sem.acquire({ ttlMs: 5_000 })]
      expect(process.memoryUsage().heapUsed - heapBefore).toBeLessThan(50 * 1024 * 1024)
      const range = backend.layout.namesRange(namespace)
      const keys = (await admin.kv.range({ key: range.start, range_end: range.end })).kvs.map((kv) => kv.key.toString())
      expect(keys).toHaveLength(2)
      for (const key of keys) expect(key).toMatch(/\/semaphore\/2147483647\.\d+$/)
      await Promise.all(leases.map((l) => l.release()))
    } finally {
      await locks.close()
      await backend.close()
      await cleanup(namespace)
    }
  })

  it("etcd layout: Go's key <prefix>/<lock key>/<lease hex> on that lease, value = owner; readers and permits beside it", async () => {
    const namespace = `lk-golayout-${process.pid}`
    const backend = etcdBackend({ hosts: ETCD_URL, layout: 'etcd', prefix: 'lk-go-prefix' })
    const locks = createLocks({ backend, namespace })
    try {
      const held = async (key: string) => {
        const res = await admin.getAll().prefix(`lk-go-prefix/${key}/`).exec()
        return res.kvs.map((kv) => ({ key: kv.key.toString(), lease: BigInt(kv.lease), value: kv.value.toString() }))
      }
      const lease = await locks.mutex('a:b').acquire({ ttlMs: 2_000 })
      const [kv] = await held(`${namespace}:a:b`)
      expect(kv?.key).toBe(`lk-go-prefix/${namespace}:a:b/${kv?.lease.toString(16)}`)
      expect(kv?.value).toMatch(/^[0-9a-f-]{36}$/)
      const guard = await backend.holderGuard({ key: `${namespace}:a:b`, kind: 'mutex', token: lease.token })
      expect(guard.key).toBe(kv?.key)
      await lease.release()
      const read = await locks.readWrite('r').read.acquire({ ttlMs: 2_000 })
      const permit = await locks.semaphore('r', { permits: 3 }).acquire({ ttlMs: 2_000 })
      const keys = (await held(`${namespace}:r`)).map((k) => k.key.slice(`lk-go-prefix/${namespace}:r/`.length))
      expect(keys.sort()).toEqual([
        expect.stringMatching(/^read\/[0-9a-f]+$/),
        expect.stringMatching(/^semaphore\/3\.[0-2]$/),
      ])
      // The semaphore lives apart from the mutex of its name (Go's mutex waits for both).
      expect(await locks.mutex('r').tryAcquire()).toBeUndefined()
      await read.release()
      const mutex = await locks.mutex('r').tryAcquire()
      expect(mutex).toBeDefined()
      await Promise.all([mutex?.release(), permit.release()])
    } finally {
      await locks.close()
      await backend.close()
      await admin.delete().prefix('lk-go-prefix/')
    }
  })

  it("kindOf (the watch's delete path) finds the kind parse finds, in both layouts", () => {
    for (const layout of [new KeyLayout('latchkey'), new GoMutexLayout('p')]) {
      for (const lockKey of ['ns:m', 'ns:a/b', 'ns:ü %']) {
        const prefix = layout.lockPrefix(lockKey)
        const keys = [
          ...(['mutex', 'fair', 'read', 'write'] as const).map((kind) =>
            layout.ownerKey({ key: lockKey, kind }, '6699', 'o/1'),
          ),
          layout.slotKey({ key: lockKey, kind: 'semaphore' }, 3, 2),
          `${prefix}nokind`,
          `${prefix}bogus/leaf`,
          `${prefix}mutex/leaf/extra`,
          'elsewhere/x',
        ]
        for (const key of keys) expect(layout.kindOf(key, lockKey, prefix)).toBe(layout.parse(key, lockKey)?.kind)
      }
    }
  })

  it('layout is checked before any I/O, in options and in the URL', () => {
    expect(parseEtcdUrl('etcd://127.0.0.1:2379?layout=etcd')).toMatchObject({ layout: 'etcd' })
    expect(() => parseEtcdUrl('etcd://127.0.0.1:2379?layout=go')).toThrow(/layout is latchkey or etcd, received "go"/)
    // @ts-expect-error: a layout that does not exist
    expect(() => etcdBackend({ hosts: ETCD_URL, layout: 'curator' })).toThrow(RangeError)
  })
})

/**
 * `inner` with the kv calls of `kv` in place of its own; the others pass through, except `prepareTxn`, which is there
 * only when `kv` has it (without it the backend builds a release txn at the release, as with an etcd3 client).
 */
function withKv(inner: EtcdClient, kv: Partial<EtcdClient['kv']>): EtcdClient {
  return {
    ...inner,
    kv: { txn: (request) => inner.kv.txn(request), range: (request) => inner.kv.range(request), ...kv },
    watch: () => inner.watch(),
    close: () => inner.close(),
  }
}

/**
 * Runs `run` on locks over a backend whose client (of its own) is `wrap` of a plain one, e.g. to count its calls;
 * closes everything and removes the namespace's keys after.
 */
async function withCountingClient(
  namespace: string,
  wrap: (inner: EtcdClient) => EtcdClient,
  run: (locks: ReturnType<typeof createLocks>) => Promise<void>,
): Promise<void> {
  const inner = openEtcdClient({ hosts: [ETCD_URL], callTimeoutMs: 2_000 })
  const backend = etcdBackend({ client: wrap(inner) })
  const locks = createLocks({ backend, namespace })
  try {
    await run(locks)
  } finally {
    await locks.close()
    await backend.close()
    inner.close()
    await cleanup(namespace)
  }
}
