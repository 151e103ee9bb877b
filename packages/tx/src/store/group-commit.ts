import { type CteWrite, combine } from './pg-statements.js'
import type { SqlQuery } from './sql-driver.js'

interface Queued {
  readonly key: string
  readonly write: (name: string) => CteWrite
  readonly resolve: (applied: boolean) => void
  readonly reject: (error: unknown) => void
}

/** An error the server reported for the statement (an SQLSTATE outside connection exceptions): nothing applied. */
function definitive(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code
  return typeof code === 'string' && /^[0-9A-Z]{5}$/.test(code) && !code.startsWith('08')
}

/**
 * Group commit of the log's writes on PostgreSQL: the writes of concurrent transactions that arrive while a
 * statement is in flight are sent together as the next one, one statement and one commit (a WAL flush) for all
 * of them, instead of one each. Nothing waits on a timer: a lone write goes out at once, so latency at low load
 * is one round trip, and under load the batches grow by themselves. Each write is still atomic and fenced on its
 * own (its CTEs only see its own global row), and a transaction appears at most once per statement (PostgreSQL
 * cannot change one row twice in a statement), so its writes stay in order. A write sent alone goes as a named
 * prepared statement (a handful of texts). If the server rejects a combined
 * statement, nothing of it applied, and each write is sent again alone so one bad write fails only itself.
 */
export class GroupCommit {
  private queue: Queued[] = []
  private readonly inFlight = new Set<string>()
  private flushing = 0

  constructor(
    private readonly query: SqlQuery,
    /** Statements in flight at once (each on its own pooled connection). */
    private readonly maxFlushes = 4,
    /** Writes per statement (at about 20 parameters each, far below PostgreSQL's 65,535). */
    private readonly maxBatch = 64,
  ) {}

  /** Sends `write` (named by the CTE prefix it is given) in the next statement; resolves whether it applied. */
  submit(key: string, write: (name: string) => CteWrite): Promise<boolean> {
    return new Promise((resolve, reject) => {
      this.queue.push({ key, write, resolve, reject })
      this.pump()
    })
  }

  private pump(): void {
    while (this.flushing < this.maxFlushes) {
      const batch = this.take()
      if (batch.length === 0) return
      this.flushing++
      void this.flush(batch).finally(() => {
        this.flushing--
        for (const q of batch) this.inFlight.delete(q.key)
        this.pump()
      })
    }
  }

  /** The next batch: queued writes in order, one per transaction, none of a transaction already in flight. */
  private take(): Queued[] {
    const batch: Queued[] = []
    const rest: Queued[] = []
    for (const q of this.queue) {
      if (batch.length < this.maxBatch && !this.inFlight.has(q.key)) {
        batch.push(q)
        this.inFlight.add(q.key)
      } else rest.push(q)
    }
    this.queue = rest
    // One lock order for every statement: two coordinators' batches never wait on each other in a cycle.
    return batch.sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0))
  }

  private async flush(batch: readonly Queued[]): Promise<void> {
    try {
      const applied = await this.send(batch)
      for (const [i, q] of batch.entries()) q.resolve(applied[i] === true)
    } catch (error) {
      if (batch.length === 1 || !definitive(error)) {
        for (const q of batch) q.reject(error)
        return
      }
      for (const q of batch) await this.send([q]).then(([a]) => q.resolve(a === true), q.reject)
    }
  }

  private async send(batch: readonly Queued[]): Promise<boolean[]> {
    const { sql, params } = combine(batch.map((q, i) => q.write(`w${i}_`)))
    // A write sent alone has one of a few texts: prepared, it is parsed and planned once per connection.
    const row = (await this.query(sql, params, { prepare: batch.length === 1 })).rows[0] ?? {}
    return batch.map((_, i) => Number(row[`n${i}`]) === 1)
  }
}
