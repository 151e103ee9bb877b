/**
 * Places in etcd's line followed through one name's delete watch, so that a waiter learns its turn without a
 * read: a place taken at revision `r` has, before it, the keys the line held at `r`, and no key can join ahead of
 * it later (create revisions only grow). Once the watch has delivered the delete of each of them, the place is
 * first. That holds only when the watch delivers every delete after `r`: it must have been in place by then
 * (`completeAfter`), and a delete it delivered before the txn's answer arrived (the two come on different
 * streams) must still be known (`recent`).
 */
/** Where a followed place stands. */
export type PlaceState = 'first' | 'behind' | 'gone'

interface Place {
  readonly key: string
  readonly ahead: Set<string>
  gone: boolean
}

/** Deletes remembered for places about to be followed. */
const RECENT_DELETES = 256

/** The followed places of one name in this process, by owner. */
export class FollowedPlaces {
  private readonly places = new Map<string, Place>()
  /** The revision after which the watch delivers every delete; undefined until known (never, with etcd3). */
  private completeAfter: bigint | undefined
  /** The latest deletes seen, key -> revision (in arrival order). */
  private readonly recent = new Map<string, bigint>()
  /** The newest revision of a delete dropped from `recent`: a place older than it cannot be followed. */
  private forgottenUpTo = -1n

  /** The watch was created: every delete after `revision` comes (a broken stream resumes after the last seen). */
  watchFrom(revision: bigint): void {
    this.completeAfter ??= revision
  }

  /**
   * Follows `owner`'s place `key`, taken at `revision` with the keys `ahead` before it; false (not followed)
   * where the watch may have missed a delete since `revision`.
   */
  follow(owner: string, key: string, revision: bigint, ahead: readonly string[]): boolean {
    if (this.completeAfter === undefined || this.completeAfter > revision || this.forgottenUpTo > revision) return false
    const after = (k: string): boolean => (this.recent.get(k) ?? -1n) > revision
    this.places.set(owner, { key, ahead: new Set(ahead.filter((k) => !after(k))), gone: after(key) })
    return true
  }

  /** Where `owner`'s place stands; undefined when it is not followed. */
  stateOf(owner: string): PlaceState | undefined {
    const place = this.places.get(owner)
    if (place === undefined) return undefined
    return place.gone ? 'gone' : place.ahead.size === 0 ? 'first' : 'behind'
  }

  /** How many keys are still before `owner`'s place (undefined when it is not followed). */
  aheadOf(owner: string): number | undefined {
    return this.places.get(owner)?.ahead.size
  }

  has(owner: string): boolean {
    return this.places.has(owner)
  }

  forget(owner: string): void {
    this.places.delete(owner)
  }

  /**
   * A key of the name was deleted (`key`, at revision `modRevision`): the owners whose place became first, or went, by it (`turned`), and those with
   * one key left before them (`next`: that key most likely holds the lock now).
   */
  deleted(key: string, modRevision: string): { turned: ReadonlySet<string>; next: readonly string[] } {
    this.recent.delete(key) // a key deleted again moves to the newest end
    this.recent.set(key, BigInt(modRevision))
    if (this.recent.size > RECENT_DELETES) {
      const [oldest, revision] = this.recent.entries().next().value as [string, bigint]
      this.recent.delete(oldest)
      if (revision > this.forgottenUpTo) this.forgottenUpTo = revision
    }
    let moved: { turned: Set<string>; next: string[] } | undefined
    for (const [owner, place] of this.places) {
      let oneLeft = false
      if (place.key === key) place.gone = true
      else if (!place.ahead.delete(key)) continue
      else oneLeft = place.ahead.size === 1
      moved ??= { turned: new Set(), next: [] }
      if (oneLeft) moved.next.push(owner)
      if (place.gone || place.ahead.size === 0) moved.turned.add(owner)
    }
    // Most deletes move no place of this process (another process's key went): nothing is built for them.
    return moved ?? UNMOVED
  }
}

const UNMOVED: { turned: ReadonlySet<string>; next: readonly string[] } = { turned: new Set(), next: [] }
