/**
 * `layout: 'etcd'` against Go: Debian's `etcdctl lock` (Go's `concurrency.Mutex`) as child processes on the shared
 * etcd, and latchkey holders of every kind on the same name. etcdctl is installed by the servers script when
 * missing (never skipped).
 */
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import { Etcd3 } from 'etcd3'
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import { etcdBackend } from '../src/backends/etcd/index.js'
import type { Lease } from '../src/core/lease.js'
import { lockKey } from '../src/core/lock-key.js'
import { createLocks, type Locks } from '../src/core/locks.js'
import { refusalLog } from '../src/testing/refusal-log.js'
import { ETCD_URL } from './support/etcd-backend-module.js'
import { ensureEtcdctl, etcdctlLock, type LockProcess } from './support/etcdctl.js'
import { eventually } from './support/eventually.js'

const namespace = `lk-go-${process.pid}`
/** The Go side's critical section: read the counter, pause (the read-modify-write gap), write it back, log a turn. */
const GO_INCREMENT = 'n=$(cat "$1"); sleep 0.02; echo $((n + 1)) > "$1"; echo "go $ETCD_LOCK_KEY" >> "$2"'
const admin = new Etcd3({ hosts: ETCD_URL })
const backend = etcdBackend({ hosts: ETCD_URL, layout: 'etcd' })
const log = refusalLog(backend)
const children: LockProcess[] = []
let opened: Locks[] = []

function locks(): Locks {
  const made = createLocks({ backend: log.backend, namespace })
  opened.push(made)
  return made
}

/**
 * `promise`, marked handled: when an assertion fails before it is awaited, closing its Locks rejects it, and that
 * must not surface as an unhandled rejection hiding the failure. Awaiting it still sees the rejection.
 */
function handled<T>(promise: Promise<T>): Promise<T> {
  promise.catch(() => undefined)
  return promise
}

/** Go's name for lock `name` of this test's namespace: `etcdctl lock <this>`. */
const goName = (name: string) => lockKey(namespace, name)

function lockProcess(name: string, command: readonly string[] = []): LockProcess {
  const p = etcdctlLock(goName(name), command)
  children.push(p)
  return p
}

/** The keys under Go's mutex prefix `<name>/`, oldest first. */
async function line(name: string): Promise<Array<{ key: string; createRevision: bigint; value: string }>> {
  const res = await admin
    .getAll()
    .prefix(`${goName(name)}/`)
    .sort('Create', 'Ascend')
    .exec()
  return res.kvs.map((kv) => ({
    key: kv.key.toString(),
    createRevision: BigInt(kv.create_revision),
    value: kv.value.toString(),
  }))
}

beforeAll(() => ensureEtcdctl(), 600_000)
afterEach(async () => {
  for (const p of children.splice(0)) {
    p.stop()
    await p.exited
  }
  await Promise.all(opened.map((l) => l.close()))
  opened = []
})
afterAll(async () => {
  await backend.close()
  await admin.delete().prefix(namespace)
  admin.close()
})

describe('etcd layout: latchkey and `etcdctl lock` (Go concurrency.Mutex) on one name', () => {
  it('etcdctl and latchkey holders take turns in one line, incrementing one counter with a read-modify-write gap; it ends exact', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'lk-go-counter-'))
    const counter = join(dir, 'counter')
    const order = join(dir, 'order')
    await writeFile(counter, '0')
    await writeFile(order, '')
    const pairs = 5
    const name = lockKey(namespace, 'counter')
    try {
      const [a, b] = [locks(), locks()]
      // Everyone lines up behind a latchkey holder, alternately Go and latchkey (fair: a place in Go's line).
      const gate = await a.mutex('counter').acquire({ ttlMs: 20_000 })
      const increment = (who: string) => async (lease: Lease) => {
        const n = Number(await readFile(counter, 'utf8'))
        await sleep(20) // the read-modify-write gap: an overlapping holder would lose an update
        await writeFile(counter, String(n + 1))
        await writeFile(order, `${who} ${lease.token}\n`, { flag: 'a' })
      }
      const go: LockProcess[] = []
      const fair: Promise<void>[] = []
      for (let i = 0; i < pairs; i++) {
        go.push(lockProcess('counter', ['sh', '-c', GO_INCREMENT, 'sh', counter, order]))
        await eventually(`Go waiter ${i} in line`, async () => (await line('counter')).length === 2 * i + 2, 10_000)
        const refused = log.refusedOwners(name)
        fair.push(handled(b.fairMutex('counter').withLock(increment('latchkey'), { ttlMs: 10_000, waitMs: 60_000 })))
        // Its key is in line (the txn that queues it) before its try answers "not yet".
        await eventually(`latchkey waiter ${i} in line`, async () => (await line('counter')).length === 2 * i + 3)
        await eventually(`latchkey waiter ${i} told to wait`, () => log.refusedOwners(name) > refused)
      }
      // Plain mutex waiters (one per backend here, so each the first of its process) join the line behind them.
      const refused = log.refusedOwners(name)
      const plain = [a, b].map((l) =>
        handled(l.mutex('counter').withLock(increment('mutex'), { ttlMs: 10_000, waitMs: 60_000 })),
      )
      await eventually('the plain waiters asked', () => log.refusedOwners(name) >= refused + 2)
      const queued = await line('counter')
      expect(Number(await readFile(counter, 'utf8'))).toBe(0)
      await gate.release()
      await Promise.all([...fair, ...plain])
      expect(await Promise.all(go.map((p) => p.exited))).toEqual(Array(pairs).fill(0))
      expect(Number(await readFile(counter, 'utf8'))).toBe(2 * pairs + 2)
      const turns = (await readFile(order, 'utf8'))
        .trim()
        .split('\n')
        .map((turn) => turn.split(' ') as [string, string])
      expect(turns.map(([who]) => who)).toEqual([...Array(pairs).fill(['go', 'latchkey']).flat(), 'mutex', 'mutex'])
      // Fencing: Go's holders in their key's create revision (Go's IsOwner guard), latchkey's in its token, the
      // holders' revisions rise with every turn: the line is ordered by create revision, and so are the grants.
      const revisionOf = new Map(queued.map((k) => [k.key, k.createRevision]))
      const revisions = turns.map(([who, what]) => (who === 'go' ? revisionOf.get(what) : BigInt(what)))
      expect(revisions.every((r, i) => r !== undefined && (i === 0 || r > (revisions[i - 1] as bigint)))).toBe(true)
      expect(revisions[0]).toBeGreaterThan(gate.token)
      expect(await line('counter')).toEqual([])
    } finally {
      await rm(dir, { recursive: true, force: true })
    }
  }, 90_000)

  it.each(['mutex', 'fair', 'write'] as const)(
    'a latchkey %s holder blocks `etcdctl lock` until it releases; Go queues behind its key',
    async (kind) => {
      const name = `held-${kind}`
      const l = locks()
      const lock = kind === 'mutex' ? l.mutex(name) : kind === 'fair' ? l.fairMutex(name) : l.readWrite(name).write
      const lease = await lock.acquire({ ttlMs: 10_000 })
      const [mine] = await line(name)
      expect(mine?.createRevision).toBe(lease.token)
      expect(mine?.key).toMatch(new RegExp(`^${goName(name)}/[0-9a-f]+$`))
      // Go's key shape; the value (Go writes none and reads none) is latchkey's owner id.
      expect(mine?.value).toMatch(/^[0-9a-f-]{36}$/)
      const go = lockProcess(name, ['sh', '-c', 'echo "acquired $ETCD_LOCK_KEY"'])
      await eventually('etcdctl put its key behind ours', async () => (await line(name)).length === 2, 10_000)
      expect(go.hasExited()).toBe(false)
      expect(go.stdout()).toBe('')
      await lease.release()
      expect(await go.exited).toBe(0)
      expect(go.stdout()).toMatch(new RegExp(`^acquired ${goName(name)}/[0-9a-f]+\\n$`))
    },
    30_000,
  )

  it("`etcdctl lock` blocks latchkey mutex, fair, read and write; a fair waiter queues in Go's line", async () => {
    const go = lockProcess('go-held')
    await eventually('etcdctl holds', () => go.stdout().startsWith(`${goName('go-held')}/`), 10_000)
    const [goKey] = await line('go-held')
    const l = locks()
    const rw = l.readWrite('go-held')
    for (const lock of [l.mutex('go-held'), l.fairMutex('go-held'), rw.read, rw.write]) {
      expect(await lock.tryAcquire(), lock.name).toBeUndefined()
    }
    const refused = log.refusedOwners(lockKey(namespace, 'go-held'))
    let granted = false
    const fair = handled(
      l
        .fairMutex('go-held')
        .acquire({ ttlMs: 10_000, waitMs: 20_000 })
        .then((lease) => {
          granted = true
          return lease
        }),
    )
    await eventually('the fair waiter was refused', () => log.refusedOwners(lockKey(namespace, 'go-held')) > refused)
    await eventually('its key is in line behind Go', async () => (await line('go-held')).length === 2)
    expect(granted).toBe(false)
    go.stop()
    const lease = await fair
    expect(await go.exited).toBe(0)
    expect(lease.token).toBeGreaterThan(goKey?.createRevision ?? 0n)
    await lease.release()
    expect(await line('go-held')).toEqual([])
  }, 30_000)

  it('latchkey read-lock holders block `etcdctl lock`, and a Go waiter blocks new readers', async () => {
    const [a, b] = [locks(), locks()]
    const r1 = await a.readWrite('shared').read.acquire({ ttlMs: 10_000 })
    const r2 = await b.readWrite('shared').read.acquire({ ttlMs: 10_000 })
    const keys = await line('shared')
    expect(keys.map((k) => k.key)).toEqual(
      expect.arrayContaining([expect.stringMatching(new RegExp(`^${goName('shared')}/read/[0-9a-f]+$`))]),
    )
    const go = lockProcess('shared', ['sh', '-c', 'echo acquired'])
    await eventually('etcdctl waits behind both readers', async () => (await line('shared')).length === 3, 10_000)
    // Go's waiter is in line: a new reader waits behind it instead of starving it.
    expect(await a.readWrite('shared').read.tryAcquire()).toBeUndefined()
    await r1.release()
    expect(go.hasExited()).toBe(false)
    expect(go.stdout()).toBe('')
    await r2.release()
    expect(await go.exited).toBe(0)
    expect(go.stdout()).toBe('acquired\n')
  }, 30_000)

  it('semaphore permits block `etcdctl lock` of their name, and a Go holder or waiter keeps new permits out', async () => {
    const l = locks()
    const pool = () => l.semaphore('pool', { permits: 3 })
    const permit = await pool().acquire({ ttlMs: 10_000 })
    const go = lockProcess('pool', ['sh', '-c', 'echo acquired'])
    await eventually('etcdctl waits behind the permit', async () => (await line('pool')).length === 2, 10_000)
    // A Go waiter in line: a new permit would be younger than its key, and Go would not wait for it.
    expect(await pool().tryAcquire()).toBeUndefined()
    expect(go.stdout()).toBe('')
    await permit.release()
    expect(await go.exited).toBe(0)
    expect(go.stdout()).toBe('acquired\n')
    const holder = lockProcess('pool')
    await eventually('etcdctl holds', () => holder.stdout().startsWith(`${goName('pool')}/`), 10_000)
    expect(await pool().tryAcquire()).toBeUndefined()
    const refused = log.refusedOwners(lockKey(namespace, 'pool'))
    const waiting = handled(pool().acquire({ ttlMs: 10_000, waitMs: 20_000 }))
    await eventually('the permit waits', () => log.refusedOwners(lockKey(namespace, 'pool')) > refused)
    holder.stop()
    const later = await waiting
    expect(await holder.exited).toBe(0)
    // Latchkey's own mutex of the name is another lock: a permit is taken beside it.
    const mutex = await l.mutex('pool').acquire({ ttlMs: 10_000 })
    const beside = await pool().tryAcquire()
    expect(beside).toBeDefined()
    await Promise.all([later.release(), mutex.release(), beside?.release()])
    expect(await line('pool')).toEqual([])
  }, 30_000)
})
