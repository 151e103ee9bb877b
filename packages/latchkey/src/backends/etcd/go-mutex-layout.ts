/**
 * `layout: 'etcd'`: the keys of Go's `concurrency.Mutex` (client/v3/concurrency/mutex.go), which `etcdctl lock
 * <name>` uses. A Go mutex on `<name>` puts `<name>/<lease id in hex>` (empty value, on its session's lease) and
 * holds the lock while its key has the lowest create revision of every key starting with `<name>/`; a waiter
 * keeps its key and waits for the deletion of the key just older than its own (`waitDeletes`). Go looks at
 * nothing but create revisions under that prefix, so every latchkey holder and queued waiter of the name lives
 * there too, and Go waits for all of them:
 *
 * - mutex, fair, write: `<name>/<lease hex>`, exactly Go's key; the value is the latchkey owner id (Go writes an
 *   empty value and never reads it). Go's keys and these exclude each other alike.
 * - read: `<name>/read/<lease hex>`, value = owner. Readers skip only each other's folder.
 * - semaphore: slots `<name>/semaphore/<permits>.<n>`, value = owner. A Go mutex waits for every permit taken
 *   before it asked, and a permit waits for Go's holders and waiters: the keys with an empty value among the
 *   exclusive ones. It does not wait for latchkey's mutex of its name (a semaphore lives apart from its mutex and
 *   read-write lock), whose keys carry an owner id.
 *
 * The lock key is used verbatim (no encoding, as `etcdctl lock` takes it), after `<prefix>/` when a prefix is
 * given. So, as in Go, the folder of `a` contains that of `a/b`: lock `a` also waits for the holders of `a/b`.
 */
import type { LockKind, LockRef } from '../../backend/types.js'
import { EtcdKeyLayout, type KeyRange, type ParsedKey, parseSlot, prefixRange, rangesOutside } from './keys.js'

const READ_FOLDER = 'read/'
const SEMAPHORE_FOLDER = 'semaphore/'

/** Go's `concurrency.Mutex` layout: see the file comment. */
export class GoMutexLayout extends EtcdKeyLayout {
  readonly name = 'etcd'
  readonly keyNamesLease = true
  private readonly base: string

  /** With `prefix`, a lock key `k` is the Go mutex `<prefix>/k`; without, the Go mutex `k`. */
  constructor(readonly prefix: string | undefined) {
    super()
    this.base = prefix === undefined ? '' : `${prefix}/`
  }

  /** `<name>/`: Go's mutex prefix (`NewMutex(session, name)` adds the slash). */
  lockPrefix(key: string): string {
    return `${this.base}${key}/`
  }

  kindPrefix(key: string, kind: LockKind): string {
    if (kind === 'read') return `${this.lockPrefix(key)}${READ_FOLDER}`
    if (kind === 'semaphore') return `${this.lockPrefix(key)}${SEMAPHORE_FOLDER}`
    return this.lockPrefix(key)
  }

  /** `fmt.Sprintf("%s%x", pfx, leaseID)`, in the kind's folder. */
  ownerKey(ref: LockRef, leaseId: string): string {
    return `${this.kindPrefix(ref.key, ref.kind)}${BigInt(leaseId).toString(16)}`
  }

  /**
   * The owner id. Go's mutex writes an empty value and never reads one, so the value is how latchkey tells Go's
   * keys from its own: a semaphore waits for Go's holders and waiters, not for latchkey's mutex of its name.
   */
  ownerValue(owner: string): string {
    return owner
  }

  /** A permit waits for Go's keys, which are among the mutex / read-write keys of the name. */
  override foreignRanges(ref: LockRef): KeyRange[] {
    return ref.kind === 'semaphore' ? this.stateRanges({ key: ref.key, kind: 'mutex' }) : []
  }

  /** Go writes an empty value; latchkey writes its owner id. */
  override isForeign(kv: { readonly value: Buffer }): boolean {
    return kv.value.length === 0
  }

  /** Semaphore: its folder. The rest: every key of the name outside the semaphore folder (Go's keys included). */
  stateRanges(ref: LockRef): KeyRange[] {
    if (ref.kind === 'semaphore') return [prefixRange(this.kindPrefix(ref.key, 'semaphore'))]
    return rangesOutside(prefixRange(this.lockPrefix(ref.key)), [this.folder(ref.key, 'semaphore')])
  }

  /** A reader also skips the read folder: any other key of the name is exclusive (Go's, or latchkey's). */
  blockingRanges(ref: LockRef): KeyRange[] {
    if (ref.kind !== 'read') return this.stateRanges(ref)
    const holes = [this.folder(ref.key, 'read'), this.folder(ref.key, 'semaphore')]
    return rangesOutside(prefixRange(this.lockPrefix(ref.key)), holes)
  }

  namesRange(namePrefix: string): KeyRange {
    return prefixRange(`${this.base}${namePrefix}`)
  }

  /**
   * Every key under `<lockKey>/` is a holder or waiter: a reader, a permit slot, or else exclusive. Without
   * `lockKey`, undefined: names nest, so a key alone does not say which lock it belongs to.
   */
  parse(raw: Buffer | string, lockKey?: string): ParsedKey | undefined {
    if (lockKey === undefined) return undefined
    const text = typeof raw === 'string' ? raw : raw.toString()
    const prefix = this.lockPrefix(lockKey)
    if (!text.startsWith(prefix)) return undefined
    const rest = text.slice(prefix.length)
    if (rest.startsWith(SEMAPHORE_FOLDER)) {
      return { lockKey, kind: 'semaphore', owner: '', ...parseSlot(rest.slice(SEMAPHORE_FOLDER.length)) }
    }
    return { lockKey, kind: rest.startsWith(READ_FOLDER) ? 'read' : 'mutex', owner: '' }
  }

  private folder(key: string, kind: 'read' | 'semaphore'): KeyRange {
    return prefixRange(this.kindPrefix(key, kind))
  }
}
