/**
 * The two client sides of a handoff gap, timed inside one worker process: the releaser's `release()` call to its
 * process's next socket write (the release on its way), and the next holder's last socket read before `acquire()`
 * returned (the notification or answer that woke it) to that return. What is left of the gap is the server's and
 * the kernel's. The caller hooks its transports' writes and reads to `wrote()` and `read()` (handoff-sides.ts for any
 * backend, etcd-contended-cpu.ts for etcd and its floors).
 */
export class HandoffSplit {
  /** Per counted handoff, release() to the socket write, in the clock's unit (ms). */
  readonly releaseToWrite: number[] = []
  /** Per counted acquisition, the last socket read to acquire() returning. */
  readonly readToGrant: number[] = []
  /** The latest acquisition was inside the measured window: its release's side is counted too. */
  private counting = false
  private releasedAt: number | undefined
  private lastReadAt = 0

  /** @param now the clock both sides are read on */
  constructor(private readonly now: () => number) {}

  /** A socket read of any connection of the process. */
  read(): void {
    this.lastReadAt = this.now()
  }

  /** A socket write of any connection of the process: the first after a release() call ends the releaser's side. */
  wrote(): void {
    if (this.releasedAt === undefined) return
    if (this.counting) this.releaseToWrite.push(this.now() - this.releasedAt)
    this.releasedAt = undefined
  }

  /** acquire() returned at `at` (on the same clock); `counted` when inside the measured window. */
  granted(at: number, counted: boolean): void {
    this.counting = counted
    if (counted) this.readToGrant.push(at - this.lastReadAt)
  }

  /** release() is about to be called: returns the instant, on the same clock. */
  releasing(): number {
    this.releasedAt = this.now()
    return this.releasedAt
  }
}
