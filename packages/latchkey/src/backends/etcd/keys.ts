/**
 * The etcd key layouts. Default: `<prefix>/<encoded lock key>/<kind>/<lease id hex>-<encoded owner>`, one key per
 * holder and per queued waiter; semaphore permits are slots `<prefix>/<encoded lock key>/semaphore/<permits>.<n>`,
 * so the holders' keys tell the permit count in force. Every value is the owner id. Semaphores live under their
 * own kind folder, so they never meet the mutex / read-write family of the same name (as `stateKey` keeps them
 * apart in the embedded backends). Go's layout (`layout: 'etcd'`) is in `go-mutex-layout.ts`.
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

/** What a key of a layout says about the lock it belongs to. */
export interface ParsedKey {
  /** The lock key (namespaced name) the key belongs to. */
  readonly lockKey: string
  readonly kind: LockKind
  /** The owner id, where the layout names it in the key ('' otherwise). */
  readonly owner: string
  /** A semaphore permit slot and the permit count its key names. */
  readonly slot?: number | undefined
  readonly permits?: number | undefined
}

/**
 * Where one backend's locks live in etcd (`layout` option): the default {@link KeyLayout} or Go's
 * `concurrency.Mutex` layout (`go-mutex-layout.ts`). Every path of the backend builds keys and ranges only here.
 */
export abstract class EtcdKeyLayout {
  /** The `layout` option value. */
  abstract readonly name: 'latchkey' | 'etcd'
  /**
   * True when key names carry the id of the lease they were created on (Go's `<name>/<lease hex>`): a lease whose
   * key moved to another lease must then never be reused, or its next key would be the same live key.
   */
  abstract readonly keyNamesLease: boolean
  /** Every key of one lock name (watched as one, read as the line). */
  abstract lockPrefix(key: string): string
  /** The folder where holders of one kind of one lock name are. */
  abstract kindPrefix(key: string, kind: LockKind): string
  /** The key of one owner's place (held or queued). */
  abstract ownerKey(ref: LockRef, leaseId: string, owner: string): string
  /** The value written under an owner's key or slot. */
  abstract ownerValue(owner: string): string
  /** The ranges whose keys compete with `ref`: its family's, or the semaphore's. */
  abstract stateRanges(ref: LockRef): KeyRange[]
  /** The ranges of the keys that block a *new* `kind` request (readers do not block readers). */
  abstract blockingRanges(ref: LockRef): KeyRange[]
  /** Every key of lock names starting with `namePrefix` (for cleanup of a test namespace). */
  abstract namesRange(namePrefix: string): KeyRange
  /** Parses a key of lock `lockKey` in this layout; undefined for a key this layout does not know. */
  abstract parse(raw: Buffer | string, lockKey?: string): ParsedKey | undefined

  /**
   * The kind `parse` finds in `key`, a key of lock `lockKey` under its {@link lockPrefix} `prefix`: what every
   * delete event of a watch needs, without the rest of `parse`.
   */
  kindOf(key: string, lockKey: string, _prefix: string): LockKind | undefined {
    return this.parse(key, lockKey)?.kind
  }

  /**
   * Ranges where another program's keys keep a `ref` request out although latchkey's own keys there do not (Go's
   * mutex keys beside latchkey's mutex, for a semaphore). None in the default layout.
   */
  foreignRanges(_ref: LockRef): KeyRange[] {
    return []
  }

  /** Whether a key of {@link foreignRanges} was written by another program. */
  isForeign(_kv: { readonly value: Buffer }): boolean {
    return false
  }

  /**
   * The key of semaphore permit `slot` (0 .. permits - 1) of a semaphore of `permits`. Permits are slots, not
   * per-owner keys, so that concurrent acquirers of different free permits do not conflict: each txn guards
   * only its own slot (and, see {@link otherCountRanges}, that no other count is in use).
   */
  slotKey(ref: LockRef, permits: number, slot: number): string {
    return `${this.slotPrefix(ref, permits)}${slot}`
  }

  /**
   * The semaphore folder minus the slots of `permits`: empty exactly when no holder uses another count. `.` ends
   * the count, so the slots of 1 (`1.`) and of 10 (`10.`) never share a prefix.
   */
  otherCountRanges(ref: LockRef, permits: number): KeyRange[] {
    const folder = prefixRange(this.kindPrefix(ref.key, 'semaphore'))
    return rangesOutside(folder, [prefixRange(this.slotPrefix(ref, permits))])
  }

  /** The slots of a semaphore of `permits`: `<semaphore folder><permits>.` */
  private slotPrefix(ref: LockRef, permits: number): string {
    return `${this.kindPrefix(ref.key, 'semaphore')}${permits}.`
  }
}

/** Parses a slot leaf `<permits>.<n>` (or `<n>`, written by versions that did not record the count). */
export function parseSlot(leaf: string): { slot: number; permits: number | undefined } {
  const dot = leaf.indexOf('.')
  return { slot: Number(leaf.slice(dot + 1)), permits: dot < 0 ? undefined : Number(leaf.slice(0, dot)) }
}

/** `folder` minus the `holes` inside it, as ranges in key order (empty ranges dropped). */
export function rangesOutside(folder: KeyRange, holes: readonly KeyRange[]): KeyRange[] {
  const sorted = [...holes].sort((a, b) => Buffer.compare(a.start, b.start))
  const out: KeyRange[] = []
  let from = folder.start
  for (const hole of sorted) {
    if (Buffer.compare(from, hole.start) < 0) out.push({ start: from, end: hole.start })
    if (Buffer.compare(from, hole.end) < 0) from = hole.end
  }
  if (Buffer.compare(from, folder.end) < 0) out.push({ start: from, end: folder.end })
  return out
}

/**
 * The default layout: `<prefix>/<encoded lock key>/<kind>/<lease id hex>-<encoded owner>`, value = the owner;
 * semaphore slots `<prefix>/<encoded lock key>/semaphore/<permits>.<n>`.
 */
export class KeyLayout extends EtcdKeyLayout {
  readonly name = 'latchkey'
  readonly keyNamesLease = false

  constructor(readonly prefix: string) {
    super()
  }

  /** The last name given to {@link lockPrefix} and its prefix: the calls of one acquisition ask for one name. */
  private lastKey: string | undefined
  private lastPrefix = ''

  /** `<prefix>/<encoded key>/`: every kind of one lock name (watched as one). */
  lockPrefix(key: string): string {
    if (key === this.lastKey) return this.lastPrefix
    // encodeURIComponent escapes "/", so one name's folder never contains another's.
    const prefix = `${this.prefix}/${encodeURIComponent(key)}/`
    this.lastKey = key
    this.lastPrefix = prefix
    return prefix
  }

  kindPrefix(key: string, kind: LockKind): string {
    return `${this.lockPrefix(key)}${kind}/`
  }

  ownerKey(ref: LockRef, leaseId: string, owner: string): string {
    return `${this.kindPrefix(ref.key, ref.kind)}${BigInt(leaseId).toString(16)}-${encodeURIComponent(owner)}`
  }

  ownerValue(owner: string): string {
    return owner
  }

  /** The four family kinds, or the semaphore folder. */
  stateRanges(ref: LockRef): KeyRange[] {
    const kinds = ref.kind === 'semaphore' ? ['semaphore' as const] : FAMILY
    return kinds.map((kind) => prefixRange(this.kindPrefix(ref.key, kind)))
  }

  blockingRanges(ref: LockRef): KeyRange[] {
    if (ref.kind !== 'read') return this.stateRanges(ref)
    return EXCLUSIVE_KINDS.map((kind) => prefixRange(this.kindPrefix(ref.key, kind)))
  }

  namesRange(namePrefix: string): KeyRange {
    return prefixRange(`${this.prefix}/${encodeURIComponent(namePrefix)}`)
  }

  /** `<prefix>/<encoded key>/<kind>/<leaf>`: the kind is the folder right after the name's, and the leaf has no `/`. */
  override kindOf(key: string, _lockKey: string, prefix: string): LockKind | undefined {
    if (!key.startsWith(prefix)) return undefined
    const slash = key.indexOf('/', prefix.length)
    if (slash < 0 || key.includes('/', slash + 1)) return undefined
    const kind = key.slice(prefix.length, slash)
    return isKind(kind) ? kind : undefined
  }

  parse(raw: Buffer | string): ParsedKey | undefined {
    const text = typeof raw === 'string' ? raw : raw.toString()
    if (!text.startsWith(`${this.prefix}/`)) return undefined
    const parts = text.slice(this.prefix.length + 1).split('/')
    if (parts.length !== 3) return undefined
    const [encoded, kind, leaf] = parts as [string, string, string]
    if (!isKind(kind)) return undefined
    const lockKey = decodeURIComponent(encoded)
    const dash = leaf.indexOf('-')
    if (dash >= 0) return { lockKey, kind, owner: decodeURIComponent(leaf.slice(dash + 1)) }
    return { lockKey, kind, owner: '', ...parseSlot(leaf) }
  }
}

/** True for exclusive kinds (mutex, fair, write). */
export function isExclusiveKind(kind: LockKind): boolean {
  return EXCLUSIVE_KINDS.includes(kind)
}

function isKind(value: string): value is LockKind {
  return value === 'semaphore' || (FAMILY as readonly string[]).includes(value)
}
