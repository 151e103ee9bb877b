/**
 * The Redis backend's operator reads: one lock family's holders and waiters from the raw records that
 * scripts/inspect.lua returns (base.lua says what each key holds), and the lock names found by SCAN.
 *
 * Holders: every record whose slot (lease + lock-delay) has not ended. In the Redisson layout a field of the
 * lock hash without a latchkey record is a Java (Redisson) holder: kind `mutex`, its hold count from the hash,
 * its expiry the hash's TTL, no token. Waiters: the line (fair waiters; odd scores are waiting writers), the
 * registered watchers (waiting mutex and semaphore acquires, kind from their spec) and watching readers.
 */
import type { HolderInfo, WaiterInfo } from '../../backend/inspection.js'
import type { LockKind } from '../../backend/types.js'
import type { KeyLayout } from './key-layout.js'

/** scripts/inspect.lua's reply. */
export type InspectReply = [number, number, string[], string[], string[], string[], string[], string[]]

function pairs(flat: readonly string[]): [string, string][] {
  const out: [string, string][] = []
  for (let i = 0; i + 1 < flat.length; i += 2) out.push([flat[i] as string, flat[i + 1] as string])
  return out
}

const RECORD = /^([a-z]+)\|(\d+)\|(\d+)\|(\d+)\|?(\d*)$/

/** The owner id a hash field names: the field itself, or Redisson's `<owner>:<thread>` as it is. */
function holderOf(field: string, record: string, count: number | undefined, now: number): HolderInfo | undefined {
  const m = RECORD.exec(record)
  if (m === null) return undefined
  const [, kind, exp, dly, tok, per] = m as unknown as [string, LockKind, string, string, string, string]
  if (Number(dly) <= now) return undefined
  return {
    owner: field,
    kind,
    token: BigInt(tok),
    expiresAt: Number(exp),
    ...(count === undefined ? {} : { count }),
    ...(kind === 'semaphore' && per !== '' ? { permits: Number(per) } : {}),
  }
}

/** The holders of one family from the reply; `split`: the records live beside the lock hash (Redisson's RLock). */
export function holdersFrom(reply: InspectReply, split: boolean): HolderInfo[] {
  const [now, pttl, m, x] = reply
  const records = new Map(pairs(split ? x : m))
  const holders: HolderInfo[] = []
  for (const [field, value] of pairs(m)) {
    const record = records.get(field)
    const count = split ? Number(value) : undefined
    if (record !== undefined) {
      const holder = holderOf(field, record, count, now)
      if (holder !== undefined) holders.push(holder)
    } else if (split) {
      // Redisson's own holder: exclusive until the hash expires (no TTL: held until unlocked).
      holders.push({
        owner: field,
        kind: 'mutex',
        count: Number(value),
        ...(pttl > 0 ? { expiresAt: now + pttl } : {}),
      })
    }
  }
  return holders
}

/** The waiters of one family from the reply, in line order then watch order. */
export function waitersFrom(reply: InspectReply): WaiterInfo[] {
  const [now, , , , q, e, w, p] = reply
  const expiry = new Map(pairs(e).map(([member, score]) => [member, Number(score)]))
  const alive = (member: string) => (expiry.get(member) ?? Number.POSITIVE_INFINITY) > now
  const waiters: WaiterInfo[] = []
  const seen = new Set<string>()
  for (const [member, score] of pairs(q)) {
    if (!alive(member)) continue
    seen.add(member)
    waiters.push({ owner: member, kind: Number(score) % 2 === 1 ? 'write' : 'fair' })
  }
  const specs = new Map(pairs(p))
  for (const member of w) {
    // spec: "kind ttlMs lockDelayMs permits mode waitTtlMs expiresAt channel"
    const spec = specs.get(member)?.split(' ')
    if (spec === undefined || Number(spec[6]) <= now || seen.has(member)) continue
    seen.add(member)
    waiters.push({ owner: member, kind: spec[0] as LockKind })
  }
  // Watching readers are kept in E only.
  for (const [member, score] of pairs(e)) {
    if (!seen.has(member) && Number(score) > now) waiters.push({ owner: member, kind: 'read' })
  }
  return waiters
}

/**
 * The lock keys a SCAN of the layout's patterns found: the latchkey layout's `latchkey:{<escaped key>}` (and
 * `:sem`), the Redisson layout's holder-record and semaphore keys and plain lock hashes (any key that is not one
 * of latchkey's or Redisson's auxiliary keys; the caller inspects each and keeps those with holders or waiters).
 */
export function lockKeysFromScan(keys: readonly string[], layout: KeyLayout): string[] {
  const found = new Set<string>()
  for (const key of keys) {
    const name = layout.name === 'redisson' ? redissonName(key) : latchkeyName(key)
    if (name !== undefined) found.add(name)
  }
  return [...found]
}

const LATCHKEY_KEY = /^latchkey:\{(.*)\}(?::sem)?$/

function latchkeyName(key: string): string | undefined {
  const m = LATCHKEY_KEY.exec(key)
  if (m === null) return undefined
  const tag = m[1] as string
  if (tag === '%') return ''
  return tag.replace(/%([0-9A-F]{2})/g, (_, hex: string) => String.fromCharCode(Number.parseInt(hex, 16)))
}

const REDISSON_NAMED = /^(?:latchkey_lock_holders|latchkey_semaphore):\{(.*)\}$/

/** A Redisson-layout key's lock name: from latchkey's record and semaphore keys, or the lock hash itself. */
function redissonName(key: string): string | undefined {
  const m = REDISSON_NAMED.exec(key)
  if (m !== null) return m[1]
  // Any other key of latchkey's or Redisson's is auxiliary; the rest may be a lock hash (inspect tells).
  return /^(latchkey_|redisson_)/.test(key) ? undefined : key
}
