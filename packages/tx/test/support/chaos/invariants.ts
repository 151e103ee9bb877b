/**
 * The chaos run's invariants, checked once every transaction is finished: money conserved (in total and per
 * bank, matching the transfers that succeeded), every business effect applied at most once, a succeeded
 * transfer with both legs applied and nothing compensated, a failed one with every applied leg compensated
 * exactly once, a TCC transfer confirmed or cancelled (never both) and nothing left frozen, and no effect for a
 * transaction the log does not know.
 */
import type { TxRecord } from '../../../src/index.js'
import type { LedgerDb } from './ledger-db.js'

/** What the test submitted, by gid. */
export interface Transfer {
  readonly gid: string
  readonly kind: 'ab' | 'ba' | 'tcc-ab' | 'tcc-ba'
  readonly amount: number
}

type Counts = Map<string, number>

async function effectCounts(bank: LedgerDb): Promise<Counts> {
  const rows = await bank.query(
    bank.db,
    `SELECT gid, branch, op, COUNT(*) AS n FROM ${bank.tables.effects} GROUP BY gid, branch, op`,
  )
  return new Map(rows.map((r) => [`${String(r.gid)} ${String(r.branch)}:${String(r.op)}`, Number(r.n)]))
}

/** Returns one sentence per violation (empty: all hold). */
export async function checkInvariants(
  banks: { a: LedgerDb; b: LedgerDb },
  initialPerBank: number,
  transfers: readonly Transfer[],
  records: readonly TxRecord[],
): Promise<string[]> {
  const violations: string[] = []
  const [totalA, totalB] = [await banks.a.total(), await banks.b.total()]
  if (totalA + totalB !== 2 * initialPerBank) {
    violations.push(`money not conserved: A ${totalA} + B ${totalB} != ${2 * initialPerBank}`)
  }
  const effects = { a: await effectCounts(banks.a), b: await effectCounts(banks.b) }
  for (const [side, counts] of Object.entries(effects)) {
    for (const [key, n] of counts) if (n > 1) violations.push(`effect applied ${n} times on bank ${side}: ${key}`)
  }
  const byGid = new Map(records.map((r) => [r.gid, r]))
  for (const side of ['a', 'b'] as const) {
    for (const key of effects[side].keys()) {
      const gid = key.split(' ')[0] as string
      if (!byGid.has(gid)) violations.push(`effect on bank ${side} for a transaction the log does not know: ${key}`)
    }
  }
  let expectedA = initialPerBank
  for (const t of transfers) {
    const tx = byGid.get(t.gid)
    if (tx === undefined) continue // never durably submitted (the coordinator was killed before it answered)
    const [payer, payee] = t.kind.endsWith('ab') ? (['a', 'b'] as const) : (['b', 'a'] as const)
    const n = (side: 'a' | 'b', what: string) => effects[side].get(`${t.gid} ${what}`) ?? 0
    if (t.kind.startsWith('tcc')) {
      violations.push(...checkTcc(t.gid, tx, { out: (op) => n(payer, `out:${op}`), in: (op) => n(payee, `in:${op}`) }))
      if (tx.status === 'succeeded') expectedA += t.kind === 'tcc-ab' ? -t.amount : t.amount
      continue
    }
    const legs = { out: n(payer, 'out:action'), in: n(payee, 'in:action') }
    const undone = { out: n(payer, 'out:compensate'), in: n(payee, 'in:compensate') }
    if (tx.status === 'succeeded') {
      if (legs.out !== 1 || legs.in !== 1 || undone.out + undone.in > 0) {
        violations.push(`${t.gid} succeeded but its effects are ${JSON.stringify({ legs, undone })}`)
      }
      const compensated = tx.branches.filter((b) => b.op === 'compensate' && b.status === 'succeeded')
      if (compensated.length > 0) violations.push(`${t.gid} succeeded but the log shows a compensation`)
      expectedA += t.kind === 'ab' ? -t.amount : t.amount
    } else if (tx.status === 'failed') {
      if (legs.out !== undone.out || legs.in !== undone.in) {
        violations.push(
          `${t.gid} failed but not every applied leg was undone once: ${JSON.stringify({ legs, undone })}`,
        )
      }
    } else {
      violations.push(`${t.gid} is ${tx.status}, not terminal`)
    }
  }
  if (violations.length === 0 && totalA !== expectedA) {
    violations.push(`bank A holds ${totalA}, the succeeded transfers say ${expectedA}`)
  }
  const frozen = (await banks.a.frozen()) + (await banks.b.frozen())
  if (frozen !== 0) violations.push(`${frozen} still frozen after every TCC transfer finished`)
  return violations
}

/**
 * A TCC transfer: succeeded → both participants tried and confirmed once, never cancelled; failed → never
 * confirmed, and each participant's cancel applied exactly when its try was (a null cancel applies nothing).
 */
function checkTcc(gid: string, tx: TxRecord, count: Record<'out' | 'in', (op: string) => number>): string[] {
  const violations: string[] = []
  for (const side of ['out', 'in'] as const) {
    const [tried, confirmed, cancelled] = ['try', 'confirm', 'cancel'].map(count[side]) as [number, number, number]
    const seen = JSON.stringify({ tried, confirmed, cancelled })
    if (confirmed > 0 && cancelled > 0) violations.push(`${gid}/${side} both confirmed and cancelled: ${seen}`)
    if (tx.status === 'succeeded' && (tried !== 1 || confirmed !== 1)) {
      violations.push(`${gid} succeeded but ${side} shows ${seen}`)
    } else if (tx.status === 'failed' && (confirmed !== 0 || cancelled !== tried)) {
      violations.push(`${gid} failed but ${side} shows ${seen}`)
    } else if (tx.status !== 'succeeded' && tx.status !== 'failed') {
      violations.push(`${gid} is ${tx.status}, not terminal`)
      break
    }
  }
  return violations
}
