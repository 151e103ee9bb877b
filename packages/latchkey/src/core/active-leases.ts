/** Something a {@link ActiveLeases} can hold: it carries its own slot, so removal needs no lookup. */
export interface ActiveEntry {
  /** Position in the owning list; -1 when not in it. Owned by {@link ActiveLeases}. */
  activeIndex: number
  forget(): Promise<void>
}

/**
 * The leases a `Locks` holds, for `close()` to release: an array with swap-remove. A `Set` did the same, but at
 * tens of thousands of acquires per second its add/delete churn kept short-lived garbage alive into old space
 * (four times as many full collections in a 50-way lock+unlock loop).
 */
export class ActiveLeases {
  private readonly items: ActiveEntry[] = []

  get size(): number {
    return this.items.length
  }

  add(entry: ActiveEntry): void {
    if (entry.activeIndex >= 0) return
    entry.activeIndex = this.items.length
    this.items.push(entry)
  }

  delete(entry: ActiveEntry): void {
    const at = entry.activeIndex
    if (at < 0 || this.items[at] !== entry) return
    const last = this.items.pop() as ActiveEntry
    entry.activeIndex = -1
    if (last === entry) return
    this.items[at] = last
    last.activeIndex = at
  }

  /** A snapshot of the entries. */
  values(): ActiveEntry[] {
    return [...this.items]
  }
}
