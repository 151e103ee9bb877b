/**
 * One acquire transaction per lock at a time in this process. Transactions on one lock are serialised by the
 * database anyway (each locks the lock row first), but a transaction waiting there holds a pool connection:
 * 250 waiters of one process that all find a lock free (the first tries of a burst) would hold the whole pool
 * while the database lets them through one by one, and every other statement of the process (releases,
 * renewals, other locks) would queue behind them. Queued here instead, they hold nothing, and the ones behind a
 * grant learn from a plain read that the lock is taken.
 */

/**
 * A FIFO of async sections per key; `run` tells its section whether it had to queue behind another.
 *
 * @example
 * const gate = new KeyGate()
 * await gate.run(key, async (queued) => (queued && (await isTaken()) ? busy : transaction()))
 */
export class KeyGate {
  private readonly tails = new Map<string, Promise<void>>()

  async run<T>(key: string, fn: (queued: boolean) => Promise<T>): Promise<T> {
    const before = this.tails.get(key)
    let done: () => void = () => undefined
    const mine = new Promise<void>((resolve) => {
      done = resolve
    })
    const tail = before === undefined ? mine : before.then(() => mine)
    this.tails.set(key, tail)
    try {
      if (before !== undefined) await before
      return await fn(before !== undefined)
    } finally {
      done()
      if (this.tails.get(key) === tail) this.tails.delete(key)
    }
  }

  /** Keys with a section running or queued (for leak checks). */
  get size(): number {
    return this.tails.size
  }
}
