/**
 * Where one lock's state lives in Redis. Every key of a lock shares one hash tag, so each script touches a
 * single Cluster slot (no CROSSSLOT), and the fencing counter is a key of its own that outlives the lock (by
 * the backend's `fenceIdleTtlMs` in this layout; forever in Redisson's, whose Java clients share it).
 */
import { threadId } from 'node:worker_threads'
import type { LockRef } from '../../backend/types.js'

/** `latchkey` (default): keys `latchkey:{name}...`; `redisson`: the RLock format shared with Java Redisson. */
export type RedisLayoutName = 'latchkey' | 'redisson'

/** The keys of one lock family (the mutex/fair/read/write family, or the semaphore) plus its channel. */
export interface LockKeys {
  /**
   * KEYS for the scripts: holders, holder records (may be the same key), line, waiter expiries, watchers in
   * order of arrival, watchers' acquire specs, fencing counter (scripts/base.lua says what each holds).
   */
  readonly keys: readonly [string, string, string, string, string, string, string]
  /** All but the fencing counter: what every script but acquire and release needs. */
  readonly stateKeys: readonly [string, string, string, string, string, string]
  /** The keys of the uncontended mutex's short scripts: acquire-mutex.lua's M, F and release-mutex.lua's M. */
  readonly shortAcquire: readonly [string, string]
  readonly shortRelease: readonly [string]
  /** pass-mutex.lua's M, E, W, P, F. */
  readonly passKeys: readonly [string, string, string, string, string]
  /** The pub/sub channel a release is published on. */
  readonly channel: string
  /** Identifies the family in this process (the channel is unique per family). */
  readonly id: string
  /**
   * When (monotonic ms) this process last sent a short acquire of the family that refreshed the fencing counter's
   * expiry and was answered (-Infinity: never): redis-backend.ts leaves the expiry alone for a while after.
   */
  fenceRefreshedAt: number
}

/** Maps lock refs and owners to Redis names. */
export interface KeyLayout {
  readonly name: RedisLayoutName
  /** Redisson's unlock script always publishes `0`; latchkey publishes only when someone waits. */
  readonly alwaysPublish: boolean
  keysOf(ref: LockRef): LockKeys
  /** The hash field naming a holder. */
  fieldOf(owner: string): string
  /** Glob matching every key and channel of every lock whose name starts with `prefix` (for cleanup). */
  patternsFor(prefix: string): readonly string[]
}

/**
 * Escapes `%`, `{` and `}` so a name can sit inside a hash tag; injective, so names never collide. The empty
 * name becomes a lone `%` (which no escaped name is), since an empty tag `{}` would hash the whole key.
 */
function escapeTag(name: string): string {
  if (name === '') return '%'
  return name.replace(/[%{}]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`)
}

function lockKeys(keys: LockKeys['keys'], channel: string, id: string): LockKeys {
  const [m, x, q, e, w, p, f] = keys
  // Built once per lock (the KeyCache keeps them): a fresh array per call is garbage on the hot path.
  return {
    keys,
    stateKeys: [m, x, q, e, w, p],
    shortAcquire: [m, f],
    shortRelease: [m],
    passKeys: [m, e, w, p, f],
    channel,
    id,
    fenceRefreshedAt: Number.NEGATIVE_INFINITY,
  }
}

/** Escapes Redis glob metacharacters. */
function escapeGlob(text: string): string {
  return text.replace(/[*?[\]\\]/g, (c) => `\\${c}`)
}

/** The default layout: `latchkey:{<name>}` plus suffixes, semaphores under `:sem`. */
export const latchkeyLayout: KeyLayout = Object.freeze({
  name: 'latchkey' as const,
  alwaysPublish: false,
  keysOf(ref: LockRef): LockKeys {
    const base = `latchkey:{${escapeTag(ref.key)}}`
    const fam = ref.kind === 'semaphore' ? `${base}:sem` : base
    // The records live in the holders hash itself (KEYS[2] = KEYS[1]): one key to write per grant.
    const keys = [fam, fam, `${fam}:line`, `${fam}:expiry`, `${fam}:watchers`, `${fam}:specs`, `${base}:fence`] as const
    return lockKeys(keys, `${fam}:released`, fam)
  },
  fieldOf(owner: string): string {
    return owner
  },
  patternsFor(prefix: string): readonly string[] {
    return [`latchkey:{${escapeGlob(prefix === '' ? '' : escapeTag(prefix))}*`]
  },
})

/** Redisson's `prefixName`: `prefix:{name}`, or `prefix:name` when the name carries its own hash tag. */
function prefixName(prefix: string, name: string): string {
  return name.includes('{') ? `${prefix}:${name}` : `${prefix}:{${name}}`
}

/**
 * Redisson's RLock layout: the lock is the hash `<name>` with field `<uuid>:<threadId>` -> hold count, its
 * channel `redisson_lock__channel:{<name>}` carries `0` on unlock. latchkey's extra state (holder records,
 * line) lives beside it under the same hash tag; the fencing counter is Redisson's `redisson_lock_token:{<name>}`,
 * which RFencedLock INCRs and never expires (an expired one would restart Java's tokens at 1), so neither do we.
 * A name containing `}` but no `{` cannot be kept in one slot (Redisson has the same limit).
 */
export const redissonLayout: KeyLayout = Object.freeze({
  name: 'redisson' as const,
  alwaysPublish: true,
  keysOf(ref: LockRef): LockKeys {
    const name = ref.key
    if (ref.kind === 'semaphore') {
      const fam = prefixName('latchkey_semaphore', name)
      const token = prefixName('redisson_lock_token', name)
      return lockKeys(
        [fam, fam, `${fam}:line`, `${fam}:expiry`, `${fam}:watchers`, `${fam}:specs`, token],
        prefixName('latchkey_semaphore__channel', name),
        fam,
      )
    }
    const keys = [
      name,
      prefixName('latchkey_lock_holders', name),
      prefixName('latchkey_lock_line', name),
      prefixName('latchkey_lock_expiry', name),
      prefixName('latchkey_lock_watchers', name),
      prefixName('latchkey_lock_specs', name),
      prefixName('redisson_lock_token', name),
    ] as const
    return lockKeys(keys, prefixName('redisson_lock__channel', name), name)
  },
  fieldOf(owner: string): string {
    // Redisson's `<client uuid>:<thread id>`: the owner is a fresh UUID per lease.
    return `${owner}:${threadId}`
  },
  patternsFor(prefix: string): readonly string[] {
    const p = escapeGlob(prefix)
    const aux = [
      'latchkey_semaphore',
      'latchkey_lock_holders',
      'latchkey_lock_line',
      'latchkey_lock_expiry',
      'latchkey_lock_watchers',
      'latchkey_lock_specs',
    ]
    return [`${p}*`, ...['redisson_lock_token', ...aux].flatMap((a) => [`${a}:{${p}*`, `${a}:${p}*`])]
  },
})

/** The layout named by `name`. */
export function layoutNamed(name: RedisLayoutName): KeyLayout {
  return name === 'redisson' ? redissonLayout : latchkeyLayout
}

const CACHE_LIMIT = 10_000

/** Remembers the keys of recently used locks: building them costs more than a map lookup on hot paths. */
export class KeyCache {
  private readonly family = new Map<string, LockKeys>()
  private readonly semaphore = new Map<string, LockKeys>()

  constructor(readonly layout: KeyLayout) {}

  keysOf(ref: LockRef): LockKeys {
    const map = ref.kind === 'semaphore' ? this.semaphore : this.family
    let keys = map.get(ref.key)
    if (keys === undefined) {
      keys = this.layout.keysOf(ref)
      // Bounded: past the limit start over rather than track recency on every call.
      if (map.size >= CACHE_LIMIT) map.clear()
      map.set(ref.key, keys)
    }
    return keys
  }
}
