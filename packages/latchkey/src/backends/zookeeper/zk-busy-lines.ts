/**
 * Locks this backend recently had to wait for. The listing that follows a create sets a child watch on the lock node,
 * so that a holder granted at its create needs no watch of its own (`OwnerEntry.parentWatch`). On a busy line that
 * watch fires at the next change, at every session that set it, and almost never guards a holder: a create there
 * mostly waits, and a waiter watches its own node (zk-first-in-line.ts). So a create on a line that had a waiter
 * here within the last second lists without the watch; should it be granted at once, its holder sets its own-node
 * watch instead (`guardLease`: one request more than on a quiet line).
 */
const BUSY_FOR_MS = 1_000
/** Past this many lines, stale entries are dropped. */
const PRUNE_AT = 1_024

export class ZkBusyLines {
  private readonly waitedAt = new Map<string, number>()

  /** A waiter of this backend is in line at `parent` now. */
  waited(parent: string): void {
    const now = performance.now()
    if (this.waitedAt.size >= PRUNE_AT && !this.waitedAt.has(parent)) {
      for (const [path, at] of this.waitedAt) if (now - at >= BUSY_FOR_MS) this.waitedAt.delete(path)
    }
    this.waitedAt.set(parent, now)
  }

  /** Whether a waiter of this backend was in line at `parent` within the last second. */
  busy(parent: string): boolean {
    const at = this.waitedAt.get(parent)
    return at !== undefined && performance.now() - at < BUSY_FOR_MS
  }
}
