/**
 * A per-key FIFO queue inside one process. The service puts it in front of each latchkey lock so that at
 * most one request per process waits on the distributed lock; the others wait here, in memory.
 *
 * latchkey already wakes one waiter per release in a process (no herd), so this is not about the herd. It
 * is kept because it measurably still helps (10,000 buyers, 100 units, 3 processes, Redis locks, the
 * lock-event counts and Redis `INFO commandstats` of a private server): a buyer queued here behind the last
 * units learns "sold out" from a plain read when its turn comes (buy.ts `isShort`) instead of taking the
 * lock once to find out, and a buyer arriving while the lock is held waits here without a backend try of
 * its own. Without it: 166-181 lock acquisitions and 672-695 Redis script calls per `lock` sale, and 39-51
 * buyers answered 503 (lock wait over 2 s); with it: 102, 273-283 and 0-2. (`sharded`: 162-168 / 491-619 /
 * 15-43 without, 110 / 287-299 / 0-7 with.)
 *
 * @example
 * const queue = new LocalQueue()
 * await queue.run('sale:1:0', () => lock.withLock(buy))
 */
export class LocalQueue {
  private readonly tails = new Map<string, Promise<void>>()

  /** Runs `fn` after every earlier `run` of `key` in this process has settled. */
  async run<T>(key: string, fn: () => Promise<T>): Promise<T> {
    const previous = this.tails.get(key) ?? Promise.resolve()
    let done: () => void = () => undefined
    const mine = new Promise<void>((resolve) => {
      done = resolve
    })
    const tail = previous.then(() => mine)
    this.tails.set(key, tail)
    try {
      await previous
      return await fn()
    } finally {
      done()
      if (this.tails.get(key) === tail) this.tails.delete(key)
    }
  }

  /** Keys with queued or running work (for tests and metrics). */
  get size(): number {
    return this.tails.size
  }
}
