import { randomUUID } from 'node:crypto'
import Database from 'better-sqlite3'
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest'
import { barrier } from '../src/barrier/index.js'
import { isTxError } from '../src/index.js'
import { type Bank, type Isolation, openBank } from './support/bank.js'
import { DIALECTS } from './support/databases.js'
import { eventually, latch } from './support/eventually.js'

describe.each(DIALECTS)('barrier on %s', (dialect) => {
  let bank: Bank
  beforeAll(async () => {
    bank = await openBank(dialect)
  })
  afterAll(async () => {
    await bank?.close()
  })

  it("DTM's disorder: cancel first is a no-op, a concurrent second cancel too, and the late try is refused", async () => {
    const gid = randomUUID()
    const before = await bank.balance()
    expect(await bank.call(gid, 'cancel', 30)).toBe('null-compensation')
    // SQLite has one writer per file: there the "concurrent" cancels run one after the other.
    const again =
      dialect === 'sqlite'
        ? [await bank.call(gid, 'cancel', 30), await bank.call(gid, 'cancel', 30)]
        : await Promise.all([bank.call(gid, 'cancel', 30), bank.call(gid, 'cancel', 30)])
    expect(again).toEqual(['duplicate', 'duplicate'])
    expect(await bank.call(gid, 'try', 30)).toBe('hanging')
    expect(await bank.balance()).toBe(before)
  })

  it('two cancels racing with no try: one null compensation, one duplicate, no effect', async () => {
    const gid = randomUUID()
    const before = await bank.balance()
    const outcomes =
      dialect === 'sqlite'
        ? [await bank.call(gid, 'cancel', 7), await bank.call(gid, 'cancel', 7)]
        : await Promise.all([bank.call(gid, 'cancel', 7), bank.call(gid, 'cancel', 7)])
    expect(outcomes.sort()).toEqual(['duplicate', 'null-compensation'])
    expect(await bank.balance()).toBe(before)
  })

  it('makes try and cancel idempotent: each applies once however often it is called', async () => {
    const gid = randomUUID()
    const before = await bank.balance()
    expect(await bank.call(gid, 'try', 10)).toBe('applied')
    expect(await bank.call(gid, 'try', 10)).toBe('duplicate')
    expect(await bank.balance()).toBe(before - 10)
    expect(await bank.call(gid, 'cancel', 10)).toBe('applied')
    expect(await bank.call(gid, 'cancel', 10)).toBe('duplicate')
    expect(await bank.call(gid, 'try', 10)).toBe('duplicate')
    expect(await bank.balance()).toBe(before)
  })

  it('a failing business function rejects (never swallowed) and leaves no barrier row: the retry applies', async () => {
    const gid = randomUUID()
    const before = await bank.balance()
    const boom = bank.inTx((trx) =>
      barrier(trx, { gid, branch: 'out', op: 'try', table: bank.barrierTable }, async (t) => {
        await bank.add(t, -50)
        throw new Error('insufficient funds')
      }),
    )
    await expect(boom).rejects.toThrow('insufficient funds')
    expect(await bank.balance()).toBe(before)
    expect(await bank.call(gid, 'try', 50)).toBe('applied')
    expect(await bank.balance()).toBe(before - 50)
    expect(await bank.call(gid, 'confirm', 50)).toBe('applied')
    expect(await bank.call(gid, 'confirm', 50)).toBe('duplicate')
  })

  it('guards saga ops too: a compensate before its action makes the late action hang', async () => {
    const gid = randomUUID()
    const run = (op: 'action' | 'compensate') =>
      bank.inTx(
        async (trx) => (await barrier(trx, { gid, branch: 's1', op, table: bank.barrierTable }, () => op)).status,
      )
    expect(await run('compensate')).toBe('null-compensation')
    expect(await run('action')).toBe('hanging')
  })

  it('rejects bad keys and handles before touching the database; a missing table has its own code', async () => {
    await bank.inTx(async (trx) => {
      await expect(barrier(trx, { gid: 'g', branch: 'b', op: 'undo' }, () => 1)).rejects.toThrow(RangeError)
      await expect(barrier(trx, { gid: '', branch: 'b', op: 'try' }, () => 1)).rejects.toThrow(RangeError)
      await expect(barrier(trx, { gid: 'g', branch: 'b', op: 'try', table: 'x;y' }, () => 1)).rejects.toThrow(
        RangeError,
      )
      await expect(barrier(trx, { gid: 'g', branch: 'b', op: 'try' }, 'f' as never)).rejects.toThrow(TypeError)
    })
    await expect(barrier({}, { gid: 'g', branch: 'b', op: 'try' }, () => 1)).rejects.toThrow(TypeError)
    if (dialect !== 'postgres') {
      // On PostgreSQL a failed statement aborts the caller's transaction; the other two can go on.
      await bank.inTx(async (trx) => {
        const missing = barrier(trx, { gid: 'g', branch: 'b', op: 'try', table: 'no_such_barrier_tbl' }, () => 1)
        await expect(missing).rejects.toMatchObject({ code: 'BARRIER_TABLE_MISSING' })
      })
    }
  })
})

describe('barrier on better-sqlite3 outside a transaction', () => {
  it('refuses to run: it must join the caller transaction', async () => {
    const db = new Database(':memory:')
    await expect(barrier(db, { gid: 'g', branch: 'b', op: 'try' }, () => 1)).rejects.toThrow(/open transaction/)
    db.close()
  })
})

/**
 * Waits until another session's statement on `table` is blocked on a row lock, so that the interleaving is the
 * one the test means. PostgreSQL says so directly. On MariaDB, INNODB_TRX is a cache refreshed only when nobody
 * read it for 100 ms (other processes on the shared server may keep it stale), so the sign is the barrier's
 * INSERT still running in PROCESSLIST: while the other transaction holds the row, that is where it waits.
 */
async function blockedOn(bank: Bank, table: string): Promise<void> {
  const sql =
    bank.dialect === 'mysql'
      ? "SELECT COUNT(*) AS n FROM information_schema.PROCESSLIST WHERE ID <> CONNECTION_ID() AND COMMAND = 'Query' AND INFO LIKE ?"
      : "SELECT COUNT(*) AS n FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE $1"
  await eventually(async () => Number((await bank.query(sql, [`%INTO ${table}%`]))[0]?.n) > 0)
}

const OVERLAPS: [string, Isolation][] = [
  ['mysql', 'READ COMMITTED'],
  ['mysql', 'REPEATABLE READ'],
  ['postgres', 'READ COMMITTED'],
  ['postgres', 'REPEATABLE READ'],
]

describe.each(OVERLAPS)('try and cancel overlapping on %s under %s', (dialect, isolation) => {
  let bank: Bank
  beforeAll(async () => {
    bank = await openBank(dialect as 'mysql' | 'postgres')
  })
  afterAll(async () => {
    await bank?.close()
  })

  // PostgreSQL REPEATABLE READ refuses the waiting call (its snapshot predates the row the other one committed):
  // the caller rolls back and calls again, as a participant answering 5xx to the coordinator would be.
  const expectedConflicts = dialect === 'postgres' && isolation === 'REPEATABLE READ' ? 1 : 0
  let conflicts = 0
  beforeEach(() => {
    conflicts = 0
  })
  afterEach(() => {
    expect(conflicts).toBe(expectedConflicts)
  })

  /** One branch call in its own transaction, retried when the barrier says so (BARRIER_CONFLICT). */
  const call = async (gid: string, op: 'try' | 'cancel', gate?: { entered: () => void; hold: Promise<void> }) => {
    for (let attempt = 1; ; attempt++) {
      try {
        return await callOnce(gid, op, gate)
      } catch (error) {
        if (!isTxError(error) || error.code !== 'BARRIER_CONFLICT' || !error.retryable || attempt >= 5) throw error
        conflicts++
      }
    }
  }

  /** One branch call in its own transaction; with `gate`, it reports when its barrier is done, then holds. */
  const callOnce = (gid: string, op: 'try' | 'cancel', gate?: { entered: () => void; hold: Promise<void> }) =>
    bank.inTx(async (trx) => {
      const outcome = await barrier(trx, { gid, branch: 'out', op, table: bank.barrierTable }, (t) =>
        bank.add(t, op === 'try' ? -5 : 5),
      )
      gate?.entered()
      await gate?.hold
      return outcome.status
    }, isolation)

  it('try holding its transaction, cancel waits on the unique key, then undoes the committed try', async () => {
    const gid = randomUUID()
    const before = await bank.balance()
    const entered = latch()
    const release = latch()
    const tried = call(gid, 'try', { entered: () => entered.open(), hold: release.promise })
    await entered.promise
    const cancelled = call(gid, 'cancel')
    // Whatever happens, let the held transaction end, so that a failure cannot leave a connection stuck.
    await blockedOn(bank, bank.barrierTable).finally(() => release.open())
    expect(await tried).toBe('applied')
    expect(await cancelled).toBe('applied')
    expect(await bank.balance()).toBe(before)
  })

  it('cancel holding its transaction (null compensation), the late try waits, then is refused as hanging', async () => {
    const gid = randomUUID()
    const before = await bank.balance()
    const entered = latch()
    const release = latch()
    const cancelled = call(gid, 'cancel', { entered: () => entered.open(), hold: release.promise })
    await entered.promise
    const tried = call(gid, 'try')
    await blockedOn(bank, bank.barrierTable).finally(() => release.open())
    expect(await cancelled).toBe('null-compensation')
    expect(await tried).toBe('hanging')
    expect(await bank.balance()).toBe(before)
  })
})
