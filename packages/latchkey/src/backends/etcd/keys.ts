/**
 * The etcd key layout: `<prefix>/<encoded lock key>/<kind>/<lease id hex>-<encoded owner>`, one key per holder
 * and per queued waiter; semaphore permits are slots `<prefix>/<encoded lock key>/semaphore/<n>`. Every value is
 * the owner id. Semaphores live under their own kind folder, so they never meet the mutex /
 * read-write family of the same name (as `stateKey` keeps them apart in the embedded backends).
 */
import type { LockKind, LockRef } from '../../backend/types.js'

/** The kinds sharing one lock state: mutex, fair and read-write exclude each other. */
export const FAMILY: readonly LockKind[] = ['mutex', 'fair', 'read', 'write']
const EXCLUSIVE_KINDS: readonly LockKind[] = ['mutex', 'fair', 'write']

/** One etcd byte range `[start, end)`. */
export interface KeyRange {
  readonly start: Buffer
  readonly end: Buffer
}

/** The smallest key greater than every key starting with `prefix` (etcd's `WithPrefix`). */
export function prefixEnd(prefix: Buffer): Buffer {
  const end = Buffer.from(prefix)
  for (let i = end.length - 1; i >= 0; i--) {
    if ((end[i] as number) < 0xff) {
      end[i] = (end[i] as number) + 1
      return end.subarray(0, i + 1)
    }
  }
  return Buffer.from([0])
}

/** The range of every key starting with `prefix`. */
export function prefixRange(prefix: string): KeyRange {
  const start = Buffer.from(prefix)
  return { start, end: prefixEnd(start) }
}

/** Builds and parses the keys of one backend (one `prefix`). */
export class KeyLayout {
  constructor(readonly prefix: string) {}

  /** `<prefix>/<encoded key>/`: every kind of one lock name (watched as one). */
  lockPrefix(key: string): string {
    // encodeURIComponent escapes "/", so one name's folder never contains another's.
    return `${this.prefix}/${encodeURIComponent(key)}/`
  }

  /** The folder of one kind of one lock name. */
  kindPrefix(key: string, kind: LockKind): string {
    return `${this.lockPrefix(key)}${kind}/`
  }

  /** The key of one owner's place (held or queued). */
  ownerKey(ref: LockRef, leaseId: string, owner: string): string {
    return `${this.kindPrefix(ref.key, ref.kind)}${BigInt(leaseId).toString(16)}-${encodeURIComponent(owner)}`
  }

  /**
   * The key of semaphore permit `slot` (0 .. permits - 1). Permits are slots, not per-owner keys, so that
   * concurrent acquirers of different free permits do not conflict: each txn guards only its own slot.
   */
  slotKey(ref: LockRef, slot: number): string {
    return `${this.kindPrefix(ref.key, 'semaphore')}${slot}`
  }

  /** The ranges whose keys compete with `ref`: the four family kinds, or the semaphore folder. */
  stateRanges(ref: LockRef): KeyRange[] {
    const kinds = ref.kind === 'semaphore' ? ['semaphore' as const] : FAMILY
    return kinds.map((kind) => prefixRange(this.kindPrefix(ref.key, kind)))
  }

  /** The ranges of the keys that block a *new* `kind` request: readers only mind exclusive kinds. */
  blockingRanges(ref: LockRef): KeyRange[] {
    if (ref.kind !== 'read') return this.stateRanges(ref)
    return EXCLUSIVE_KINDS.map((kind) => prefixRange(this.kindPrefix(ref.key, kind)))
  }

  /** Every key of lock names starting with `namePrefix` (for cleanup of a test namespace). */
  namesRange(namePrefix: string): KeyRange {
    return prefixRange(`${this.prefix}/${encodeURIComponent(namePrefix)}`)
  }

  /** Parses a key of this layout; undefined for anything else. */
  parse(
    raw: Buffer | string,
  ): { lockKey: string; kind: LockKind; owner: string; slot?: number | undefined } | undefined {
    const text = typeof raw === 'string' ? raw : raw.toString()
    if (!text.startsWith(`${this.prefix}/`)) return undefined
    const parts = text.slice(this.prefix.length + 1).split('/')
    if (parts.length !== 3) return undefined
    const [lockKey, kind, leaf] = parts as [string, string, string]
    if (!isKind(kind)) return undefined
    const dash = leaf.indexOf('-')
    const owner = dash < 0 ? '' : decodeURIComponent(leaf.slice(dash + 1))
    return { lockKey: decodeURIComponent(lockKey), kind, owner, slot: dash < 0 ? Number(leaf) : undefined }
  }
}

/** True for exclusive kinds (mutex, fair, write). */
export function isExclusiveKind(kind: LockKind): boolean {
  return EXCLUSIVE_KINDS.includes(kind)
}

function isKind(value: string): value is LockKind {
  return value === 'semaphore' || (FAMILY as readonly string[]).includes(value)
}
