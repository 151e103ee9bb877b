/**
 * A per-key FIFO queue inside one process. The service puts it in front of each latchkey lock so that at
 * most one request per process waits on the distributed lock: every other buyer in this process waits
 * here, in memory, at no cost to the lock backend. Without it, each release would wake every local waiter
 * and each would retry against the backend (the herd effect note 004 warns about): with 500 waiters on
 * one SQLite lock that is 500 write transactions per sale.
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
