/**
 * The etcd key layout: `<prefix>/<encoded lock key>/<kind>/<lease id hex>-<encoded owner>`, one key per holder
 * and per queued waiter; semaphore permits are slots `<prefix>/<encoded lock key>/semaphore/<permits>.<n>`, so
 * the holders' keys tell the permit count in force. Every value is the owner id. Semaphores live under their own
 * kind folder, so they never meet the mutex / read-write family of the same name (as `stateKey` keeps them apart
 * in the embedded backends).
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
   * The key of semaphore permit `slot` (0 .. permits - 1) of a semaphore of `permits`. Permits are slots, not
   * per-owner keys, so that concurrent acquirers of different free permits do not conflict: each txn guards
   * only its own slot (and, see {@link otherCountRanges}, that no other count is in use).
   */
  slotKey(ref: LockRef, permits: number, slot: number): string {
    return `${this.slotPrefix(ref, permits)}${slot}`
  }

  /** The slots of a semaphore of `permits`: `<semaphore folder><permits>.` */
  private slotPrefix(ref: LockRef, permits: number): string {
    return `${this.kindPrefix(ref.key, 'semaphore')}${permits}.`
  }

  /**
   * The semaphore folder minus the slots of `permits`: empty exactly when no holder uses another count. `.` ends
   * the count, so the slots of 1 (`1.`) and of 10 (`10.`) never share a prefix.
   */
  otherCountRanges(ref: LockRef, permits: number): KeyRange[] {
    const folder = prefixRange(this.kindPrefix(ref.key, 'semaphore'))
    const mine = prefixRange(this.slotPrefix(ref, permits))
    return [
      { start: folder.start, end: mine.start },
      { start: mine.end, end: folder.end },
    ]
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
  ):
    | { lockKey: string; kind: LockKind; owner: string; slot?: number | undefined; permits?: number | undefined }
    | undefined {
    const text = typeof raw === 'string' ? raw : raw.toString()
    if (!text.startsWith(`${this.prefix}/`)) return undefined
    const parts = text.slice(this.prefix.length + 1).split('/')
    if (parts.length !== 3) return undefined
    const [lockKey, kind, leaf] = parts as [string, string, string]
    if (!isKind(kind)) return undefined
    const dash = leaf.indexOf('-')
    const owner = dash < 0 ? '' : decodeURIComponent(leaf.slice(dash + 1))
    if (dash >= 0) return { lockKey: decodeURIComponent(lockKey), kind, owner }
    // A slot `<permits>.<n>` (or `<n>`, written by versions that did not record the count).
    const dot = leaf.indexOf('.')
    const permits = dot < 0 ? undefined : Number(leaf.slice(0, dot))
    return { lockKey: decodeURIComponent(lockKey), kind, owner, slot: Number(leaf.slice(dot + 1)), permits }
  }
}

/** True for exclusive kinds (mutex, fair, write). */
export function isExclusiveKind(kind: LockKind): boolean {
  return EXCLUSIVE_KINDS.includes(kind)
}

function isKind(value: string): value is LockKind {
  return value === 'semaphore' || (FAMILY as readonly string[]).includes(value)
}
