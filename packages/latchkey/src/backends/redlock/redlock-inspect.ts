/**
 * RedLock's operator reads. A lock is held only where a majority of the masters have the same owner in its key,
 * so `inspect` reads the key on every node and reports the owner that a quorum agrees on, with the expiry by
 * which fewer than a quorum will still have it (the quorum-th longest PTTL, from this host's clock). A value on a
 * minority of nodes (a failed or undone round) holds nothing and is not reported. RedLock has no waiters and no
 * fencing tokens; `list` SCANs each node for the prefix and inspects every key found.
 */
import {
  type HolderInfo,
  inspection,
  type ListRequest,
  type LockInspection,
  type LockSummary,
  lockKeysOf,
  summariesOf,
} from '../../backend/inspection.js'
import { type FanOutTiming, fanOut } from './fan-out.js'
import { isLineKey } from './line-keys.js'
import type { RedlockNode } from './redlock-node.js'
import { PEEK } from './scripts/index.js'

/** What the reads need of the backend. */
export interface RedlockInspectDeps {
  readonly nodes: readonly RedlockNode[]
  readonly quorum: number
  readonly keyPrefix: string
  readonly timing: FanOutTiming
}

/** The holder a quorum of nodes agrees on, if any. */
export async function inspectRedlock(d: RedlockInspectDeps, key: string): Promise<LockInspection> {
  const now = Date.now()
  const votes = await fanOut(d.nodes, (node) => node.run(PEEK, [d.keyPrefix + key], []), d.timing)
  const byOwner = new Map<string, number[]>()
  for (const vote of votes) {
    if (vote.state !== 'ok') continue
    const [owner, pttl] = vote.value as [unknown, unknown]
    const id = String(owner)
    if (id === '') continue
    byOwner.set(id, [...(byOwner.get(id) ?? []), Number(pttl)])
  }
  const holders: HolderInfo[] = []
  for (const [owner, ttls] of byOwner) {
    if (ttls.length < d.quorum) continue
    const sorted = ttls.sort((a, b) => b - a)
    const pttl = sorted[d.quorum - 1] as number
    holders.push(pttl > 0 ? { owner, kind: 'mutex', expiresAt: now + pttl } : { owner, kind: 'mutex' })
  }
  return inspection(key, holders, [])
}

/** Escapes Redis glob metacharacters. */
function escapeGlob(text: string): string {
  return text.replace(/[*?[\]\\]/g, (c) => `\\${c}`)
}

/** The keys under the prefix on any node, each inspected for a quorum holder. */
export async function listRedlock(d: RedlockInspectDeps, request: ListRequest): Promise<LockSummary[]> {
  const pattern = `${escapeGlob(d.keyPrefix + request.prefix)}*`
  const found = await Promise.allSettled(d.nodes.map((node) => node.scan(pattern)))
  const keys = found
    .flatMap((r) => (r.status === 'fulfilled' ? r.value : []))
    .filter((k) => !isLineKey(k))
    .map((k) => k.slice(d.keyPrefix.length))
  return summariesOf(lockKeysOf(keys, request), request.limit, (key) => inspectRedlock(d, key))
}
