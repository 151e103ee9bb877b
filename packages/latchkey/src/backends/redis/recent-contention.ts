/**
 * Which locks this process has lately seen contended, so the backend knows which scripts to send. An uncontended
 * mutex takes the short scripts (acquire-mutex.lua, release-mutex.lua: two keys and one instead of seven), and
 * when they find the lock held or waited for, the backend runs the full script after them: one more round trip.
 * A lock seen contended goes straight to the full scripts for a while, so a busy lock's waits and handoffs cost
 * what they cost before the short scripts existed.
 */
export class RecentContention {
  /** Lock family id (see key-layout.ts) -> until when (monotonic ms) it counts as contended. */
  private readonly until = new Map<string, number>()

  /**
   * @param forMs How long a sighting lasts.
   * @param limit Most families remembered; past it the memory starts over (a forgotten lock costs at most one
   * more round trip) rather than tracking recency on every call.
   */
  constructor(
    private readonly forMs: number,
    private readonly limit = 10_000,
  ) {}

  /** Whether `id` was seen contended within the last `forMs`. */
  has(id: string): boolean {
    if (this.until.size === 0) return false
    const until = this.until.get(id)
    if (until === undefined) return false
    if (until > performance.now()) return true
    this.until.delete(id)
    return false
  }

  /** `id` was just seen held by another owner, or waited for. */
  saw(id: string): void {
    if (this.until.size >= this.limit && !this.until.has(id)) this.until.clear()
    this.until.set(id, performance.now() + this.forMs)
  }
}
