import type { SaleAudit } from '../store/types.js'
import type { LoadResult } from './run-load.js'

/** The audit as served by `GET /sales/:id/audit`: the store's {@link SaleAudit}, its order ids as a JSON array. */
export interface AuditSnapshot extends Omit<SaleAudit, 'orderIds'> {
  readonly orderIds: readonly string[]
  /** Reserve sales only: the Redis view (reservations), and how many the store has not settled yet. */
  readonly reserved?: {
    readonly remaining: number
    readonly sold: number
    readonly orders: number
    readonly unsettled: number
  }
}

/** One invariant and whether it held. */
export interface InvariantCheck {
  readonly name: string
  readonly ok: boolean
  readonly detail: string
}

/**
 * Checks the sale's invariants against the store's audit and what the buyers were told:
 * sold + remaining = initial, stock never negative, one order per user, orders = sold (every order a
 * buyer was given is stored, none doubled), oversold = 0.
 *
 * @example
 * const checks = checkInvariants(await getAudit(url, sale.id), result, 1)
 * const allHold = checks.every((c) => c.ok)
 */
export function checkInvariants(audit: AuditSnapshot, load: LoadResult, quantity: number): InvariantCheck[] {
  const stored = new Set(audit.orderIds)
  const missing = [...load.orderIds].filter((id) => !stored.has(id)).length
  const told = load.counts.ordered + load.counts.recovered
  const oversold = Math.max(0, audit.sold - audit.initial, told * quantity - audit.initial)
  return [
    {
      name: 'sold + remaining = initial',
      ok: audit.sold + audit.remaining === audit.initial,
      detail: `${audit.sold} + ${audit.remaining} = ${audit.sold + audit.remaining} (initial ${audit.initial})`,
    },
    { name: 'stock never negative', ok: audit.minRemain >= 0, detail: `lowest bucket ${audit.minRemain}` },
    {
      name: 'one order per user',
      ok: audit.usersWithSeveralOrders === 0 && load.counts.doubled === 0,
      detail: `${audit.usersWithSeveralOrders} users with several orders, ${load.counts.doubled} repeat orders accepted`,
    },
    {
      name: 'orders = sold (none lost, none doubled)',
      ok: missing === 0 && audit.orders * quantity === audit.sold && audit.orders === told,
      detail: `${audit.orders} stored, ${told} confirmed to buyers, ${missing} confirmed but missing`,
    },
    { name: 'oversold = 0', ok: oversold === 0, detail: `oversold ${oversold}` },
    ...(audit.reserved === undefined ? [] : [reservedCheck(audit, audit.reserved)]),
  ]
}

/** Reserve sales: every reservation in Redis became exactly one order in the store (after the relay drained). */
function reservedCheck(audit: AuditSnapshot, reserved: NonNullable<AuditSnapshot['reserved']>): InvariantCheck {
  return {
    name: 'Redis reserved = store settled',
    ok: reserved.orders === audit.orders && reserved.sold === audit.sold && reserved.remaining === audit.remaining,
    detail: `Redis ${reserved.orders} orders / ${reserved.sold} units, store ${audit.orders} / ${audit.sold}`,
  }
}
