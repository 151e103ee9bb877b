/**
 * The {@link TableTx} of a dialect: the statements of one acquire transaction on one connection, and the
 * decoding of their rows (drivers hand back BIGINTs as numbers or strings; tokens are read as text so that
 * none loses precision).
 */
import type { HolderState, WaiterState } from '../../backend/grant-rules.js'
import type { LockKind } from '../../backend/types.js'
import type { LockCounters, TableTx } from './sql-table-grant.js'
import type { SqlSession, TableDialect } from './table-dialect.js'

/** Thrown inside the acquire transaction when the lock's `latchkey_locks` row does not exist (yet). */
export class MissingLockRow extends Error {
  constructor(key: string) {
    super(`latchkey: the lock row of ${JSON.stringify(key)} does not exist`)
  }
}

type Num = number | string

interface RawHolder {
  owner: string
  kind: LockKind
  expiresAt: Num
  delayUntil: Num
  token: string
  permits: Num
  now: Num
}

/** The acquire transaction's statements on `session`, which is already inside `BEGIN`. */
export function tableTx(dialect: TableDialect, session: SqlSession): TableTx {
  const { sql } = dialect
  const k = (key: string): unknown => dialect.encodeKey(key)
  // The clock read with the lock row: a lock with no holder rows still needs a "now" for its waiters.
  let lockNow = 0
  const lockRow = async (key: string) =>
    (await session.run<{ fence: string; seq: Num; now: Num }>(sql.lockKey, [k(key)])).rows[0]
  return {
    async lockKey(key: string): Promise<LockCounters> {
      let row = await lockRow(key)
      if (row === undefined && dialect.ensureKeyInTransaction) {
        // A concurrent first insert makes this wait for that transaction, then do nothing.
        await session.run(sql.ensureKey, [k(key)])
        row = await lockRow(key)
      }
      if (row === undefined) throw new MissingLockRow(key)
      lockNow = Number(row.now)
      return { fence: BigInt(row.fence), seq: Number(row.seq) }
    },
    async holders(key: string) {
      const { rows } = await session.run<RawHolder>(sql.holders, [k(key)])
      const now = Math.max(lockNow, ...rows.map((r) => Number(r.now)))
      const holders: HolderState[] = rows.map((r) => ({
        owner: r.owner,
        kind: r.kind,
        expiresAt: Number(r.expiresAt),
        delayUntil: Number(r.delayUntil),
        token: BigInt(r.token),
        permits: Number(r.permits),
      }))
      return { now, holders }
    },
    async waiters(key: string) {
      const { rows } = await session.run<WaiterState & { seq: Num; expiresAt: Num }>(sql.waiters, [k(key)])
      return rows.map((w) => ({ ...w, seq: Number(w.seq), expiresAt: Number(w.expiresAt) }))
    },
    async deleteHolders(key, owners) {
      await session.run(sql.deleteHolders, [k(key), owners])
    },
    async deleteWaiters(key, owners) {
      await session.run(sql.deleteWaiters, [k(key), owners])
    },
    async insertHolder(key, h) {
      const values = [k(key), h.owner, h.kind, h.expiresAt, h.delayUntil, h.token.toString(), h.permits ?? 0]
      await session.run(sql.insertHolder, values)
    },
    async upsertWaiter(key, w) {
      await session.run(sql.upsertWaiter, [k(key), w.owner, w.kind, w.seq, w.expiresAt])
    },
    async saveCounters(key, counters) {
      await session.run(sql.saveCounters, [counters.fence.toString(), counters.seq, k(key)])
    },
  }
}
