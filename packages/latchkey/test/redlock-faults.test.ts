/**
 * RedLock under node faults, on five private redis-server processes (ports 6481-6485) that these tests kill
 * (SIGKILL), pause (SIGSTOP) and restart. The crash-restart problem is shown, not hidden: a node restarted empty
 * while a lease is held joins a second client's majority and lets a second holder in; an AOF with
 * `appendfsync always`, or a restart delayed past the lease, does not.
 */
import type { Redis } from 'ioredis'
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import type { Backend } from '../src/backend/types.js'
import { REDLOCK_KEY_PREFIX, type RedlockBackendOptions, redlockBackend } from '../src/backends/redlock/index.js'
import type { Lease } from '../src/core/lease.js'
import { createLocks, type Locks } from '../src/core/locks.js'
import { BackendUnavailableError, NotLockHolderError, QuorumNotReachedError } from '../src/errors.js'
import { redlockIoredis } from './support/redlock-backend-module.js'
import { FAULT_PORTS, FaultNode, removeFaultDataRoot, waitUntil } from './support/redlock-servers.js'
import { timed } from './support/timed.js'

const nodes = FAULT_PORTS.map((port) => new FaultNode(port))
const opened: { locks: Locks; backend: Backend; clients: Redis[] }[] = []
let admin: Redis[] = []
let seq = 0

/**
 * A RedLock "client": its own five connections, backend and Locks. The node timeout is 250 ms by default, not the
 * 20-50 ms of the backend: on this shared 2-core test host a healthy redis-server is sometimes descheduled for tens
 * of ms, and the outcome assertions below must not mistake it for a paused one. A paused node still costs 2.5 % of a
 * 10 s lease. `{}` gives the backend's own node timeouts. `commandsOut()` counts the commands sent on its five
 * connections and not answered yet (see whenIdle).
 */
function client(options: Pick<RedlockBackendOptions, 'nodeTimeoutMs'> = { nodeTimeoutMs: 250 }) {
  const clients = nodes.map((n) => redlockIoredis(n.url))
  let out = 0
  for (const r of clients) {
    const send = r.sendCommand.bind(r)
    r.sendCommand = (command, stream) => {
      out++
      const done = () => {
        out--
      }
      command.promise.then(done, done)
      return send(command, stream)
    }
  }
  const backend = redlockBackend({ clients, ...options })
  const locks = createLocks({ backend, namespace: 'faults' })
  const c = { locks, backend, clients, commandsOut: () => out }
  opened.push(c)
  return c
}

/**
 * Runs `act` at a moment when no command of `c` is out, checked in the same tick as `act` runs. Every round of a
 * waiter sends its commands in the tick that starts it and ends, on the microtasks of its last answer, before the
 * next tick: so no round is out when `act` runs, and none can start before `act` returns.
 */
const whenIdle = (c: { commandsOut: () => number }, act: () => void) =>
  waitUntil(() => {
    if (c.commandsOut() > 0) return false
    act()
    return true
  }, 'a command of the client stayed out')

const ready = (c: { clients: Redis[] }, i: number) =>
  waitUntil(() => c.clients[i]?.status === 'ready', `client of node ${i} did not reconnect`)
const down = (c: { clients: Redis[] }, i: number) =>
  waitUntil(() => c.clients[i]?.status !== 'ready', `client of node ${i} did not notice the kill`)
/** Whether node `i` has the lock's key (a fresh connection: the node must be running). */
const has = async (i: number, name: string) => (await admin[i]?.exists(`${REDLOCK_KEY_PREFIX}faults:${name}`)) === 1

beforeAll(async () => {
  await Promise.all(nodes.map((n) => n.start()))
  admin = nodes.map((n) => redlockIoredis(n.url))
})

afterEach(async () => {
  for (const c of opened.splice(0)) {
    await c.locks.close()
    await c.backend.close()
    for (const r of c.clients) r.disconnect()
  }
  // Every node back up, empty and without persistence, for the next test.
  for (const n of nodes) {
    n.resume()
    if (n.running) continue
    n.wipe()
    await n.start()
  }
  await Promise.all(admin.map((a) => waitUntil(() => a.status === 'ready', 'admin client did not reconnect')))
  await Promise.all(admin.map((a) => a.flushall()))
})

afterAll(async () => {
  for (const a of admin) a.disconnect()
  await Promise.all(nodes.map((n) => n.dispose()))
  removeFaultDataRoot()
})

describe('redlock under node faults (5 private redis-server processes)', () => {
  it('2 of 5 nodes killed: the 3 left still grant, extend and release the lock', async () => {
    const a = client()
    const b = client()
    const name = `two-down-${++seq}`
    await Promise.all([nodes[3]?.kill(), nodes[4]?.kill()])
    await Promise.all([down(a, 3), down(a, 4), down(b, 3), down(b, 4)])
    const lease = await a.locks.mutex(name).acquire({ ttlMs: 10_000 })
    expect(await b.locks.mutex(name).tryAcquire()).toBeUndefined()
    await lease.extend(20_000)
    expect(await b.locks.mutex(name).isLocked()).toBe(true)
    await lease.release()
    expect(await b.locks.mutex(name).isLocked()).toBe(false)
  })

  it('3 of 5 nodes killed: QuorumNotReachedError well under the lease, naming every node; nothing left behind', async () => {
    const a = client()
    const name = `three-down-${++seq}`
    await Promise.all([nodes[0]?.kill(), nodes[1]?.kill(), nodes[2]?.kill()])
    await Promise.all([down(a, 0), down(a, 1), down(a, 2)])
    const { error, ms } = await timed(() => a.locks.mutex(name).tryAcquire({ ttlMs: 10_000 }))
    // "Quickly": a small fraction of the 10 s lease (the known-dead nodes are not even waited for).
    expect(ms).toBeLessThan(2_000)
    expect(error).toBeInstanceOf(QuorumNotReachedError)
    const q = error as QuorumNotReachedError
    expect(q.nodes.map((o) => o.outcome)).toEqual(['error', 'error', 'error', 'acquired', 'acquired'])
    expect(q.nodes.map((o) => o.node)).toEqual(FAULT_PORTS.map((p) => `127.0.0.1:${p}`))
    expect(q.message).toMatch(/3 of 5 nodes needed, only 2 answered/)
    // The two nodes that said yes were released at once.
    expect([await has(3, name), await has(4, name)]).toEqual([false, false])
    // Waiting retries the retryable error and ends, when the wait runs out, with BackendUnavailableError (no
    // quorum, not a holder, is why) whose cause names the nodes.
    const timedOut = await a.locks
      .mutex(name)
      .acquire({ waitMs: 200 })
      .catch((e: unknown) => e)
    expect(timedOut).toBeInstanceOf(BackendUnavailableError)
    expect((timedOut as BackendUnavailableError).cause).toBeInstanceOf(QuorumNotReachedError)
  })

  it('a SIGSTOPped node costs at most one node timeout, and its late SET is undone by the release queued after it', async () => {
    const a = client()
    const name = `paused-${++seq}`
    expect(await a.locks.mutex(name).isLocked()).toBe(false) // every node heard once: no first-contact grace
    // isLocked resolves at a quorum of answers: node 0's may still be on its way, and pausing it now would leave it
    // never heard, so it would get the 1,000 ms first-contact deadline in both rounds below (about 2 s in all).
    // A PING on each connection is answered after the reply before it, so once they are back every node is heard.
    await Promise.all(a.clients.map((c) => c.ping()))
    nodes[0]?.pause()
    const lease = await a.locks.mutex(name).acquire({ ttlMs: 10_000 })
    await lease.extend()
    await lease.release()
    // With two more nodes dead, the paused one decides: it is timed out (after nodeTimeoutMs), not waited for.
    await Promise.all([nodes[1]?.kill(), nodes[2]?.kill()])
    await Promise.all([down(a, 1), down(a, 2)])
    const { error, ms } = await timed(() => a.locks.mutex(name).tryAcquire({ ttlMs: 10_000 }))
    expect(ms).toBeLessThan(2_000)
    expect((error as QuorumNotReachedError).nodes.map((o) => o.outcome)).toEqual([
      'timeout',
      'error',
      'error',
      'acquired',
      'acquired',
    ])
    nodes[0]?.resume()
    // The paused node runs its queued commands in order: SET NX PX, then the compare-and-delete sent after it.
    await a.clients[0]?.ping()
    expect(await has(0, name)).toBe(false)
  })

  it('a release waits for a majority that answers late (3 nodes descheduled for 400 ms) instead of failing', async () => {
    // The default node timeouts: a release used the 150 ms of a round without a lease, and threw QuorumNotReachedError
    // from a loaded host whose redis-servers were not scheduled for that long.
    const { locks, clients } = client({})
    const name = `late-release-${++seq}`
    const lease = await locks.mutex(name).acquire({ ttlMs: 10_000 })
    await Promise.all(clients.map((c) => c.ping()))
    for (const i of [0, 1, 2]) nodes[i]?.pause()
    const released = lease.release().then(
      () => 'released',
      (e: unknown) => e,
    )
    await new Promise((resolve) => setTimeout(resolve, 400))
    for (const i of [0, 1, 2]) nodes[i]?.resume()
    expect(await released).toBe('released')
    // The release resolved at a quorum of answers: each connection's PING is answered after its node ran it.
    await Promise.all(clients.map((c) => c.ping()))
    for (const i of [0, 1, 2, 3, 4]) expect(await has(i, name)).toBe(false)
  })

  it('a release at home passes the lock to the next waiter of its process at once, while the round that renames the keys is still out', async () => {
    const c = client({})
    const { locks } = c
    const name = `pass-on-${++seq}`
    const line = `${REDLOCK_KEY_PREFIX}faults:${name}\u0000line`
    const lease = await locks.mutex(name).acquire({ ttlMs: 10_000 })
    // The same lease length as the holder's: a lease is passed on only to a waiter that asks for as long.
    const waiting = locks.mutex(name).acquire({ ttlMs: 10_000, waitMs: 10_000 })
    // Subscribed on every node, then in line on every node.
    const channel = `${REDLOCK_KEY_PREFIX}faults:${name}:released`
    await waitUntil(
      async () =>
        (await Promise.all(admin.map((a) => a.call('PUBSUB', 'NUMSUB', channel)))).every(
          (r) => Number((r as [string, number])[1]) === 1,
        ),
      'the waiter did not subscribe on every node',
    )
    await waitUntil(
      async () => (await Promise.all(admin.map((a) => a.zcard(line)))).every((n) => n === 1),
      'the waiter did not take its place in line on every node',
    )
    // A release does not hand the lock at home to a waiter with a round out (that round could undo the keys handed
    // to it): it releases on a quorum, here not until the nodes resume. The waiter starts rounds on its own: its
    // poll every second, and one for each SUBSCRIBE acknowledgement, which its process may read well after NUMSUB
    // counts it (under load, one came while a PING sent here to wait the rounds out was on its way, and the lock
    // went to the line). So the nodes are paused and the lock released in the tick that finds no command out.
    let second: Lease | undefined
    let released: Promise<unknown> = Promise.resolve()
    try {
      await whenIdle(c, () => {
        for (const i of [0, 1, 2]) nodes[i]?.pause()
        released = lease.release().then(
          () => 'released',
          (e: unknown) => e,
        )
      })
      // A quorum of nodes cannot answer, and the waiter holds the lock all the same: within the validity the nodes
      // gave its process. Before, it waited for the renaming round (here until the nodes resume).
      const got = await Promise.race([waiting, new Promise<'late'>((r) => setTimeout(() => r('late'), 2_000))])
      expect(got).not.toBe('late')
      second = got as Lease
      for (const i of [0, 1, 2]) nodes[i]?.resume()
      expect(await released).toBe('released')
      // The keys were renamed to it on every node: its release (owner-checked) deletes them everywhere.
      await second.release()
      await Promise.all(c.clients.map((r) => r.ping()))
      for (const i of [0, 1, 2, 3, 4]) expect(await has(i, name)).toBe(false)
    } finally {
      for (const i of [0, 1, 2]) nodes[i]?.resume()
      await (second ?? (await waiting.catch(() => undefined)))?.release().catch(() => undefined)
    }
  })

  it('a majority that answers only after the lease is over is no lock: no validity left, every node undone', async () => {
    const { locks } = client({ nodeTimeoutMs: 2_000 })
    const name = `no-validity-${++seq}`
    expect(await locks.mutex(name).isLocked()).toBe(false)
    for (const i of [0, 1, 2]) nodes[i]?.pause()
    const attempt = locks
      .mutex(name)
      .tryAcquire({ ttlMs: 100 })
      .catch((e: unknown) => e)
    await new Promise((resolve) => setTimeout(resolve, 300))
    for (const i of [0, 1, 2]) nodes[i]?.resume()
    const error = await attempt
    // Every node granted, but 300 ms into a 100 ms lease: a majority with no validity left is a failure.
    expect(error).toBeInstanceOf(QuorumNotReachedError)
    expect((error as Error).message).toMatch(/no validity left/)
    for (const i of [0, 1, 2, 3, 4]) expect(await has(i, name)).toBe(false)
  })

  /** The crash-restart problem: A, B, C locked by client 1; D, E not; C crashes and restarts. */
  async function client1HoldsABC(name: string, ttlMs: number) {
    const one = client()
    const two = client()
    await Promise.all([nodes[3]?.kill(), nodes[4]?.kill()])
    await Promise.all([down(one, 3), down(one, 4)])
    const lease = (await one.locks.mutex(name).acquire({ ttlMs, autoRenew: false })) as Lease
    await Promise.all([nodes[3]?.start(), nodes[4]?.start()])
    await Promise.all([ready(two, 3), ready(two, 4), ready(one, 3), ready(one, 4)])
    expect(await two.locks.mutex(name).tryAcquire()).toBeUndefined() // A, B, C are client 1's majority
    return { one, two, lease }
  }

  it('KNOWN UNSAFE: a node restarted without persistence while a lease is held lets a second holder in', async () => {
    const name = `restart-empty-${++seq}`
    const { one, two, lease } = await client1HoldsABC(name, 10_000)
    await nodes[2]?.kill()
    await Promise.all([down(two, 2), down(one, 2)])
    await nodes[2]?.start() // --appendonly no: C comes back empty
    await Promise.all([ready(two, 2), ready(one, 2)])
    const second = await two.locks.mutex(name).tryAcquire({ ttlMs: 10_000 })
    // Two holders at once: client 1's lease is still valid by every local measure, and client 2 got C, D, E.
    expect(second).toBeDefined()
    expect(lease.signal.aborted).toBe(false)
    // Client 1 finds out only at its next extend (the watchdog's, with autoRenew), which a majority refuses.
    await expect(lease.extend()).rejects.toBeInstanceOf(NotLockHolderError)
    await second?.release()
  })

  it('with appendfsync always on the restarted node, the key survives the crash and no second holder gets in', async () => {
    const name = `restart-aof-${++seq}`
    await nodes[2]?.kill()
    nodes[2]?.wipe()
    await nodes[2]?.start('aof-always')
    const { one, two, lease } = await client1HoldsABC(name, 10_000)
    await nodes[2]?.kill()
    await Promise.all([down(two, 2), down(one, 2)])
    await nodes[2]?.start('aof-always') // replays the AOF: the key is back with its remaining TTL
    await Promise.all([ready(two, 2), ready(one, 2)])
    expect(await has(2, name)).toBe(true)
    expect(await two.locks.mutex(name).tryAcquire({ ttlMs: 10_000 })).toBeUndefined()
    await lease.release()
  })

  it('with the restart delayed past the lease, the empty node rejoins only when there is nothing left to forget', async () => {
    const name = `restart-delayed-${++seq}`
    const ttlMs = 1_000
    const { one, two, lease } = await client1HoldsABC(name, ttlMs)
    await nodes[2]?.kill()
    await Promise.all([down(two, 2), down(one, 2)])
    // While C is down, A and B still say client 1: no majority for client 2.
    expect(await two.locks.mutex(name).tryAcquire({ ttlMs })).toBeUndefined()
    await waitUntil(() => lease.signal.aborted, 'lease 1 did not expire', 5_000)
    await waitUntil(async () => !(await has(0, name)) && !(await has(1, name)), 'keys on A, B did not expire', 5_000)
    await nodes[2]?.start() // empty, but after every lease it took part in has expired
    await ready(two, 2)
    const second = await two.locks.mutex(name).acquire({ ttlMs, waitMs: 2_000 })
    expect(lease.signal.aborted).toBe(true) // client 1 had already stopped: no overlap
    await second.release()
  })
})
