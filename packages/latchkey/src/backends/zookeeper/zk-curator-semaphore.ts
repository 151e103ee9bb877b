/**
 * One `tryAcquire` of a semaphore in the `curator` layout, by Curator's `InterProcessSemaphoreV2` protocol
 * (`internalAcquire1Lease`), so Java services using it and latchkey share one set of permits:
 *
 * 1. hold the recipe's internal mutex `<path>/locks` (an `InterProcessMutex`: our `_c_<owner>-lock-<seq>` node
 *    is first in line; else watch the node before it);
 * 2. while holding it, create `<path>/leases/_c_<owner>-lease-<seq>` (EPHEMERAL_SEQUENTIAL);
 * 3. the lease is ours once `<path>/leases` has at most `permits` children; else wait for a change of its
 *    children, still holding the internal mutex (so nobody queues behind us meanwhile);
 * 4. let the internal mutex go.
 *
 * Holding the internal mutex, the leases listed are all there are (only its holder creates one), so when they
 * leave a permit, steps 2 to 4 go out in one round trip (`grantAtCreate`).
 *
 * Curator counts every child of `leases`; so do we, and a child no layout names is moreover an exclusive holder
 * (no lease is granted behind it). A latchkey lease node carries `{"ttlMs":…}` once granted, so a latchkey waiter
 * deletes one whose TTL ran out by the server's clock; Curator's (its creator's IP address) hold until their session
 * ends. The permit count is a convention every client must share (Curator's `maxLeases` is not stored).
 */
import type { AcquireRequest, AcquireResult } from '../../backend/types.js'
import { type AttemptDeps, grant, keeps } from './zk-attempt.js'
import { isConnectionError, ZK, type ZkOpResult, zkCode } from './zk-client.js'
import { type GateState, NO_NODE, nameOf, type OwnerEntry, waitingNode } from './zk-entry.js'
import { checkHolders } from './zk-holders.js'
import { createNode, listChildren, removeGate, writeLease } from './zk-node-ops.js'
import { decodePermits, encodeLease, type LockNode, lineOf } from './zk-nodes.js'
import { watchChildren, watchNodes } from './zk-watch.js'

/** Tries once (a few rounds when a line changes under us); never waits for a release. */
export async function attemptCuratorSemaphore(
  entry: OwnerEntry,
  request: AcquireRequest,
  deps: AttemptDeps,
): Promise<AcquireResult> {
  let retryAfterMs: number | undefined
  for (let round = 0; round < 8; round++) {
    let children: string[]
    if (entry.node.is === 'none' || entry.node.is === 'unsure') {
      const created = await createLeaseNode(entry, request, deps)
      if (created === 'again') continue
      if (!Array.isArray(created)) return created
      children = created
    } else children = await listChildren(entry.conn, entry.parent)
    const ours = entry.node
    if (ours.is !== 'waiting') continue
    const line = lineOf(children, entry.layout.parse)
    const index = line.findIndex((n) => n.name === ours.name)
    if (index < 0) {
      entry.node = NO_NODE // our lease node was deleted (forceRelease): create another while holding the gate
      continue
    }
    const others = line.filter((n) => n.name !== ours.name)
    if (line.length <= request.permits && !line.slice(0, index).some((n) => n.foreign)) {
      // One round trip: the session answers in order, so the lease is written before the internal mutex goes.
      const [stat] = await Promise.all([writeLease(entry, request.ttlMs), releaseGate(entry, deps)])
      return grant(entry, request, stat)
    }
    const holders = await checkHolders(entry, others)
    if (holders === 'changed') continue
    retryAfterMs = holders.retryAfterMs
    if (!keeps(entry, request)) {
      await deps.drop(entry)
      return { acquired: false, retryAfterMs }
    }
    // Listed again with the watch set: a release between our listing and the watch would otherwise be missed.
    const watched = await watchChildren(entry, deps.hub)
    if (watched.length !== children.length || watched.some((c) => !children.includes(c))) continue
    return { acquired: false, retryAfterMs }
  }
  return { acquired: false, retryAfterMs: retryAfterMs ?? 1 }
}

/**
 * Takes the internal mutex and creates our lease node under it: resolves the leases' children then (ours among
 * them), `again` to look once more, or the answer of a try that ends here (queued, or another count in force).
 */
async function createLeaseNode(
  entry: OwnerEntry,
  request: AcquireRequest,
  deps: AttemptDeps,
): Promise<string[] | 'again' | AcquireResult> {
  const taken = await takeGate(entry, deps)
  if (taken.gate === 'changed') return 'again'
  if (taken.gate === 'waiting') {
    // Queued behind another acquirer: the count in force is the first lease's, else the first queued one's.
    const { count: inForce, vanished } = await countInForce(entry, [taken.leases, taken.ahead])
    if (inForce !== undefined && inForce !== request.permits) return withdraw(entry, deps, inForce)
    // A node ahead went away between the listings and the reads: its count may be in a lease node by now.
    if (inForce === undefined && vanished) return 'again'
    if (!keeps(entry, request)) await deps.drop(entry)
    return { acquired: false }
  }
  // Holding the internal mutex, the leases listed are all there are: nobody else creates one until we let go.
  const leases = taken.leases.names
  const counted = countInForce(entry, [taken.leases])
  counted.catch(() => undefined)
  const full = leases.length + 1 > request.permits || lineOf(leases, entry.layout.parse).some((n) => n.foreign)
  if (!full && entry.node.is === 'none') return grantAtCreate(entry, request, deps, counted)
  // Created with the count only (its lease is written at the grant), in the same round trip as the check.
  const created = createNode(entry, undefined, (p) => deps.ensureParent(entry.conn, p))
  created.catch(() => undefined)
  const { count: inForce } = await counted
  if (inForce !== undefined && inForce !== request.permits) {
    await created.catch(() => undefined) // so that its node, named by now, is deleted with the gate's
    return withdraw(entry, deps, inForce)
  }
  return (await created).children
}

/**
 * A lease that is ours at its create (the leases listed under the internal mutex leave a permit): one round trip
 * creates the lease node with its lease, writes the leases node in the same transaction (its new mzxid is our
 * node's czxid, the token, as a transaction commits at one zxid; nobody watches that node's data) and lets the
 * internal mutex go, so the next acquirer is woken a round trip sooner than by create, then write, then release.
 */
async function grantAtCreate(
  entry: OwnerEntry,
  request: AcquireRequest,
  deps: AttemptDeps,
  counted: Promise<{ count: number | undefined }>,
): Promise<AcquireResult | 'again'> {
  const { conn, parent } = entry
  const prefix = entry.layout.prefix(entry.owner, entry.kind, entry.permits)
  entry.node = { is: 'unsure' }
  const committed = conn.run<readonly ZkOpResult[]>('multi', (cb) =>
    conn.client
      .transaction()
      .create(`${parent}/${prefix}`, encodeLease(request.ttlMs, request.permits), ZK.EPHEMERAL_SEQUENTIAL)
      .setData(parent, Buffer.alloc(0), -1)
      .commit(cb),
  )
  committed.catch(() => undefined)
  const released = releaseGate(entry, deps)
  released.catch(() => undefined)
  let results: readonly ZkOpResult[]
  try {
    results = await committed
  } catch (error) {
    await released.catch(() => undefined)
    if (zkCode(error) === ZK.NO_NODE) {
      entry.node = NO_NODE // nothing was created (a transaction is all or nothing): make the leases node first
      await deps.ensureParent(conn, parent)
      return 'again'
    }
    // Left unsure on a connection error: the next round finds the node by its prefix.
    if (isConnectionError((error as { cause?: unknown }).cause ?? error) && conn.alive) return 'again'
    throw error
  }
  const path = results[0]?.path
  const stat = results[1]?.stat
  if (path === undefined || stat === undefined) throw new Error('zookeeper: a transaction answered without its results')
  entry.node = waitingNode(path.slice(path.lastIndexOf('/') + 1))
  await released
  const { count: inForce } = await counted
  if (inForce !== undefined && inForce !== request.permits) return withdraw(entry, deps, inForce)
  return grant(entry, request, { ...stat, czxid: stat.mzxid })
}

/**
 * The count in force is the first one named by a latchkey node (in line order) of `groups`, read in turn (the
 * leases, then the acquirers queued ahead for the internal mutex), undefined when none names one (Curator's nodes
 * name none: their data is the creator's address); `vanished` when a node was gone by the time it was read.
 */
async function countInForce(
  entry: OwnerEntry,
  groups: readonly Group[],
): Promise<{ count: number | undefined; vanished: boolean }> {
  const { conn } = entry
  const own = new Set([nameOf(entry), entry.gate?.name])
  const reads = groups.flatMap(({ parent, names }) =>
    lineOf(
      names.filter((n) => !own.has(n)),
      entry.layout.parse,
    )
      .filter((n) => !n.foreign)
      .map((n) => `${parent}/${n.name}`),
  )
  if (reads.length === 0) return { count: undefined, vanished: false }
  const counts = await Promise.all(
    reads.map((path) =>
      conn
        .run<Buffer>('getData', (cb) => conn.client.getData(path, (e, d) => cb(e, d)))
        .then(decodePermits, (error: unknown) => {
          if (zkCode(error) === ZK.NO_NODE) return null
          throw error
        }),
    ),
  )
  return { count: counts.find((c) => typeof c === 'number'), vanished: counts.includes(null) }
}

/** Gives up this attempt (its nodes are deleted) because another count is in force. */
async function withdraw(entry: OwnerEntry, deps: AttemptDeps, inForce: number): Promise<AcquireResult> {
  await deps.drop(entry)
  return { acquired: false, permitsInForce: inForce }
}

/** Child names of one node. */
interface Group {
  readonly parent: string
  readonly names: readonly string[]
}

/**
 * Takes (or checks) the internal mutex `<path>/locks`: `held` when our node is first in line (Curator's
 * `InterProcessMutex` with one lease), `waiting` with a watch on the node before ours, `changed` to look again.
 * The create, the listing of `locks` and the listing of `leases` go out together (one round trip).
 */
async function takeGate(
  entry: OwnerEntry,
  deps: AttemptDeps,
): Promise<{ gate: 'held' | 'waiting' | 'changed'; leases: Group; ahead: Group }> {
  const gate = entry.gate as GateState
  const { conn } = entry
  const prefix = entry.layout.prefix(entry.owner, 'mutex', 1)
  const create =
    gate.name === undefined && !gate.unsure
      ? conn.run<string>('create', (cb) =>
          conn.client.create(
            `${gate.parent}/${prefix}`,
            encodeLease(undefined, entry.permits),
            ZK.EPHEMERAL_SEQUENTIAL,
            cb,
          ),
        )
      : undefined
  if (create !== undefined) gate.unsure = true
  const listed = listChildren(conn, gate.parent)
  const leased = listChildren(conn, entry.parent)
  listed.catch(() => undefined)
  leased.catch(() => undefined)
  const none: Group = { parent: gate.parent, names: [] }
  const leases = async (): Promise<Group> => ({ parent: entry.parent, names: await leased })
  if (create !== undefined) {
    try {
      const path = await create
      gate.name = path.slice(path.lastIndexOf('/') + 1)
      gate.unsure = false
    } catch (error) {
      if (zkCode(error) === ZK.NO_NODE) {
        gate.unsure = false
        await deps.ensureParent(conn, gate.parent)
        return { gate: 'changed', leases: await leases(), ahead: none }
      }
      // Left unsure on a connection error: the next try (or drop) looks for the node by its prefix.
      if (isConnectionError((error as { cause?: unknown }).cause ?? error) && conn.alive) {
        return { gate: 'changed', leases: await leases(), ahead: none }
      }
      throw error
    }
  }
  const children = await listed
  if (gate.unsure) {
    gate.name = children.find((c) => c.startsWith(prefix))
    gate.unsure = false
    if (gate.name === undefined) return { gate: 'changed', leases: await leases(), ahead: none }
  }
  const line = lineOf(children, entry.layout.parse)
  const index = line.findIndex((n) => n.name === gate.name)
  if (index < 0) {
    gate.name = undefined // deleted behind our back (forceRelease): take a new place in line
    return { gate: 'changed', leases: await leases(), ahead: none }
  }
  if (index === 0) return { gate: 'held', leases: await leases(), ahead: none }
  // Curator watches the node `maxLeases` (1) before ours.
  const gone = await watchNodes(entry, [line[index - 1] as LockNode], deps.hub, gate.parent)
  const ahead = { parent: gate.parent, names: line.slice(0, index).map((n) => n.name) }
  return { gate: gone ? 'changed' : 'waiting', leases: await leases(), ahead }
}

/** Lets the internal mutex go once the lease is ours (Curator's `lock.release()` in a finally). */
async function releaseGate(entry: OwnerEntry, deps: AttemptDeps): Promise<void> {
  const gate = entry.gate as GateState
  await removeGate(entry)
  deps.emptied(gate.parent)
}
