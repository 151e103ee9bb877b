/**
 * Runs a function inside a new local transaction on the participant's own database (a pg Pool, a mysql2 pool or
 * a better-sqlite3 database; see ../local-db.ts): commit when it resolves, roll back when it rejects.
 */
import { beginLocal, checkIsolation, type Isolation, localDbKind } from '../local-db.js'

export type { Isolation } from '../local-db.js'

/** Runs `fn(trx)` in a transaction; the connection is returned to its pool afterwards. */
export type InTransaction = <T>(fn: (trx: unknown) => Promise<T>) => Promise<T>

const WHO = 'latchkey-tx/fastify:'

/**
 * The transaction runner for `db`, recognised by shape. Throws a TypeError naming `db` when it is none of the
 * three, and a RangeError for an unknown isolation, before any I/O.
 */
export function transactionRunner(db: unknown, isolation?: Isolation): InTransaction {
  const level = checkIsolation(isolation, WHO)
  const kind = localDbKind(db, `${WHO} db`)
  const run: InTransaction = async (fn) => {
    const tx = await beginLocal(db as object, WHO, level)
    try {
      const result = await fn(tx.trx)
      await tx.commit()
      return result
    } catch (error) {
      await tx.rollback()
      throw error
    }
  }
  return kind === 'sqlite' ? queued(run) : run
}

/**
 * better-sqlite3 has one connection: a second BEGIN while a handler awaits would fail, so calls are queued and
 * run one at a time (SQLite serialises writers anyway).
 */
function queued(run: InTransaction): InTransaction {
  let queue: Promise<unknown> = Promise.resolve()
  return (fn) => {
    const next = queue.then(
      () => run(fn),
      () => run(fn),
    )
    queue = next.catch(() => undefined)
    return next
  }
}
