/**
 * A waiting mutex acquire on etcd, Go `concurrency.Mutex` style. Its first try that finds the lock taken leaves
 * its key behind as its place in line (one txn: `If <lock free> Then Put(key) Else Put(key), Range(line)`); from
 * then on the watch wakes it only when the key just older than its own goes, and once no older key is left it
 * holds the lock without a write: the key already lives on the lease it holds with (TTL of `ttlMs`), and one
 * keepalive, sent beside the read that checks the line, makes that lease outlive the caller's deadline. A handoff
 * costs the releaser's delete, where a try by every waiting process (a raft write each, all but one failing) used
 * to follow each release. The keepalive is not on the handoff's path when the place's lease was refreshed lately
 * (when one key was left before it, or for an earlier acquisition): the grant then times the lease from that
 * refresh (`grantedAt`), which costs the caller at most {@link freshSlackMs} of it. Behind a holder of the same
 * process, the place is taken by that holder's release txn (`releaseAndJoin`, mutex-release-join.ts): the delete
 * and the join are one raft write.
 *
 * Only the head of this process's waiters of the name runs this (`WatchHub.turnOf`): one place in etcd's line
 * per process, whatever its number of waiters. The fair line of `acquire.ts` differs in one point: its waiting key
 * is on a short queue lease, moved to the holder's lease by a put when it is granted. Here the grant must not cost
 * that raft write, so a crashed waiter's place lasts up to its TTL, as a crashed holder's lock does.
 */
import type { AcquireRequest, AcquireResult } from '../../backend/types.js'
import { type AcquireDeps, admission, leaseFor, putOp, won } from './acquire.js'
import { type EtcdKeyValue, type EtcdTxnResponse, isLeaseGone } from './etcd-client.js'
import { freshSlackMs, type OwnerLease } from './leases.js'
import { createdAt, type KeyedOwner } from './owners.js'
import { lineRange, placeIn } from './queued-acquire.js'

/** A try of the head of this process's mutex waiters of `req.key`: granted, or a miss that keeps its place. */
export async function acquireLined(d: AcquireDeps, req: AcquireRequest, until: number): Promise<AcquireResult> {
  const state = d.owners.get(req.owner, req.key, req.kind)
  if (state?.role === 'waiter') {
    const result = await checkPlace(d, req, state, until)
    if (result !== undefined) return result
  }
  return joinOrWin(d, req, until)
}

/**
 * The grant a woken head takes with no request (its subscription's `takeGrant`): the watch saw every key older
 * than its place go, and the place's lease is fresh enough for the caller's deadline, so no keepalive is due.
 * Exactly what {@link checkPlace} answers first in that case; undefined in every other (a try then checks the place).
 */
export function grantOnWake(d: AcquireDeps, req: AcquireRequest, until: number): AcquireResult | undefined {
  const state = d.owners.get(req.owner, req.key, req.kind)
  if (state?.role !== 'waiter' || d.hub.placeOf(req, req.owner) !== 'first') return undefined
  return grantFresh(d, req, state, until)
}

/**
 * Granted when no older key is left, a miss when one is, undefined when the place is gone (its lease ran out, or
 * a force release deleted it). The watch tells where the place stands when it followed it since it was taken;
 * otherwise a read of the line does. Either way a keepalive of the place's lease goes out first: the grant needs
 * it (sent after the caller's start, it makes the lease outlive the caller's deadline), and so does a place kept.
 */
async function checkPlace(
  d: AcquireDeps,
  req: AcquireRequest,
  state: KeyedOwner,
  until: number,
): Promise<AcquireResult | undefined> {
  const followed = d.hub.placeOf(req, req.owner)
  if (followed === 'first') {
    const granted = grantFresh(d, req, state, until)
    if (granted !== undefined) return granted
  }
  const refreshed = followed === 'gone' ? undefined : d.leases.refreshSoon(state.lease)
  let first = followed === 'first'
  if (followed === undefined) {
    const line = await d.client.kv.range(lineRange(d, req))
    const place = placeIn(d, req, state, line.kvs)
    if (place.mine) {
      first = place.before === undefined
      if (!first) return (await refreshed) ? behind(d, req, state, line.kvs, BigInt(line.header.revision)) : lost()
    }
  } else if (followed === 'behind' && refreshed !== undefined && (await refreshed)) return keep(state.lease)
  if (first && refreshed !== undefined) {
    d.hub.unfollow(req, req.owner)
    d.hub.setPredecessor(req, req.owner, undefined)
    return won(d, req, { lease: state.lease, key: state.key, revision: state.revision, until, refreshed })
  }
  return lost()

  function lost(): undefined {
    d.hub.unfollow(req, req.owner)
    d.owners.delete(req.owner)
    d.leases.revokeLater(state.lease)
    return undefined
  }
}

/**
 * Takes the lock if it is free, else puts this owner's key at the back of the line, in one txn. Never over
 * another's key: in Go's layout a key names a lease, and a put would take over a key of the same name.
 */
async function joinOrWin(d: AcquireDeps, req: AcquireRequest, until: number): Promise<AcquireResult> {
  const compare = admission(d, req)
  const likely = !d.hub.busy(req)
  for (let round = 0; round < 2; round++) {
    const { lease, refreshed } = await leaseFor(d, req, until, likely)
    const key = d.layout.ownerKey(req, lease.id, req.owner)
    const put = putOp(key, d.layout.ownerValue(req.owner), lease.id)
    const join = { compare: [createdAt(key, 0n)], success: [put, { request_range: lineRange(d, req) }] }
    let res: EtcdTxnResponse
    try {
      res = await d.client.kv.txn({ compare, success: [put], failure: [{ request_txn: join }] })
    } catch (error) {
      if (!isLeaseGone(error)) throw error
      d.owners.delete(req.owner) // the lease expired under us: a new one next round
      continue
    }
    const revision = BigInt(res.header.revision)
    if (res.succeeded) return won(d, req, { lease, key, revision, until, refreshed })
    const joined = res.responses[0]?.response_txn
    if (joined?.succeeded !== true) {
      d.owners.delete(req.owner)
      d.leases.revokeLater(lease)
      throw new Error(`etcd key ${key} already exists: its lease was reused while the key lived`)
    }
    const state: KeyedOwner = { role: 'waiter', lockKey: req.key, kind: req.kind, lease, key, revision }
    d.owners.set(req.owner, state)
    // The place must outlive the wait until the next try (a third of the TTL): a spare lease may be near its end.
    if (refreshed === undefined && d.leases.remainingMs(lease) < (lease.ttlS * 1_000 * 2) / 3) {
      void d.leases.refreshSoon(lease)
    }
    return behind(d, req, state, joined.responses[1]?.response_range?.kvs ?? [], revision)
  }
  return { acquired: false }
}

/**
 * A miss that keeps the place, `line` being the keys of the name at `revision`. The watch follows the keys before
 * it and wakes this owner when the last of them goes; where it cannot follow them (a watch not yet in place at
 * `revision`, or an etcd3 client's), it wakes it when the one just before goes (on any delete, if none parses).
 */
export function behind(
  d: AcquireDeps,
  req: AcquireRequest,
  state: KeyedOwner,
  line: readonly EtcdKeyValue[],
  revision: bigint,
): AcquireResult {
  // One pass over the line (a key per process in it): the family keys older than the place, and the newest of
  // them, the key just before it. A handoff reads the line once per acquisition.
  const prefix = d.layout.lockPrefix(req.key)
  const ahead: string[] = []
  let before: string | undefined
  let beforeRevision = -1n
  for (const kv of line) {
    const key = kv.key.toString()
    const kind = d.layout.kindOf(key, req.key, prefix)
    if (kind === undefined || kind === 'semaphore') continue
    const created = BigInt(kv.create_revision)
    if (created >= state.revision) continue
    ahead.push(key)
    if (created > beforeRevision) {
      before = key
      beforeRevision = created
    }
  }
  d.hub.missed(req)
  if (!d.hub.follow(req, req.owner, state.key, revision, ahead)) {
    d.hub.setPredecessor(req, req.owner, before)
  } else if (d.hub.placeOf(req, req.owner) !== 'behind') {
    // Its turn came (or the place went) between the answer's revision and its arrival: no wake-up will follow.
    return { acquired: false, retryAfterMs: 0 }
  } else if (d.hub.aheadOf(req, req.owner) === 1) refreshNext(d, req.key, req.owner)
  return keep(state.lease)
}

/**
 * Grants the first place without a keepalive when its lease is fresh enough: it outlives `until`, or lacks at most
 * {@link freshSlackMs} of it, and the lease is then timed from its last refresh (the core's deadline ends before
 * etcd's). Undefined otherwise.
 */
function grantFresh(d: AcquireDeps, req: AcquireRequest, state: KeyedOwner, until: number): AcquireResult | undefined {
  const lease = state.lease
  let grantedAt: number | undefined
  if (!d.leases.outlives(lease, until)) {
    grantedAt = d.leases.freshGrantAt(lease, req.ttlMs)
    if (grantedAt === undefined) return undefined
  }
  d.hub.unfollow(req, req.owner)
  d.hub.setPredecessor(req, req.owner, undefined)
  d.owners.set(req.owner, { ...state, role: 'holder' })
  return { acquired: true, token: state.revision, grantedAt }
}

/**
 * One key left before the place of `owner` (most likely the holder's): refresh its lease for a grant without one,
 * unless a refresh less than half the fresh slack ago already makes it grantable as it stands ({@link grantFresh}
 * checks again at the grant, and sends the keepalive itself when the wait outlasted that). A waiter whose lease
 * was refreshed for its previous acquisition a moment ago needs none: in a busy line that was about one keepalive
 * per handoff for nothing.
 */
export function refreshNext(d: AcquireDeps, lockKey: string, owner: string): void {
  const state = d.owners.get(owner, lockKey, 'mutex')
  if (state?.role !== 'waiter') return
  // The lease's TTL bounds the caller's ttlMs from above, and `t - freshSlackMs(t)` grows with t: fresh enough
  // for that TTL means fresh enough for the caller's.
  const ttlMs = state.lease.ttlS * 1_000
  if (d.leases.remainingMs(state.lease) >= ttlMs - freshSlackMs(ttlMs) / 2) return
  void d.leases.refreshSoon(state.lease)
}

/** "Not yet": the core comes back within a third of the lease's TTL at the latest, to keep the lease alive. */
function keep(lease: OwnerLease): AcquireResult {
  return { acquired: false, retryAfterMs: (lease.ttlS * 1_000) / 3 }
}
