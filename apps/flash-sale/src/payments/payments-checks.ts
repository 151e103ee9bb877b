/**
 * The invariants of a paid sale, from three audits read after everything settled: the order side (sale store:
 * payment state of each order, stock, outbox), the payment service (charges, balances) and the notifier
 * (notifications, deliveries), checked against what the buyers were told.
 */
import type { InvariantCheck } from '../load/invariants.js'
import type { LoadResult } from '../load/run-load.js'
import type { NotifierAudit } from './notifier.js'
import type { LedgerAudit } from './order-ledger.js'
import type { PaymentAudit } from './payment-db.js'

/** The coordinator's audit: the order side plus the saga log's unfinished and parked counts. */
export interface CoordinatorAudit extends LedgerAudit {
  readonly unfinished: number
  readonly parked: number
}

/** The three audits of one sale. */
export interface PaymentsAudits {
  readonly orders: CoordinatorAudit
  readonly payment: PaymentAudit
  readonly notifier: NotifierAudit
}

/** Where the three audits are served. */
export interface PaymentsUrls {
  readonly coordinatorUrl: string
  readonly paymentUrl: string
  readonly notifierUrl: string
}

/** Counts shown under the table. */
export interface PaymentsSummary {
  readonly paid: number
  readonly released: number
  /** Cents charged and kept for this sale. */
  readonly charged: number
  readonly notifications: number
  /** Deliveries of this sale's events beyond one per order (absorbed by the inbox), whole run. */
  readonly duplicateDeliveries: number
}

async function get<T>(url: string, adminToken: string): Promise<T> {
  const response = await fetch(url, { headers: { authorization: `Bearer ${adminToken}` } })
  if (!response.ok) throw new Error(`GET ${url.replace(/\?.*/, '')} failed: ${response.status}`)
  return (await response.json()) as T
}

/** Reads the three audits of `saleId`. */
export async function readAudits(urls: PaymentsUrls, saleId: string, adminToken: string): Promise<PaymentsAudits> {
  const [orders, payment, notifier] = await Promise.all([
    get<CoordinatorAudit>(`${urls.coordinatorUrl}/audit?sale=${encodeURIComponent(saleId)}`, adminToken),
    get<PaymentAudit>(`${urls.paymentUrl}/audit`, adminToken),
    get<NotifierAudit>(`${urls.notifierUrl}/audit`, adminToken),
  ])
  return { orders, payment, notifier }
}

/** Every order paid or released, no saga running, the outbox drained and every paid order notified. */
function isSettled(a: PaymentsAudits): boolean {
  const notified = new Set(a.notifier.notifications.map((n) => n.orderId))
  return (
    a.orders.unfinished === 0 &&
    a.orders.outboxUnsent === 0 &&
    a.orders.orders.every((o) => o.status === 'released' || (o.status === 'paid' && notified.has(o.id)))
  )
}

/**
 * Waits until the sale has settled (sagas finished, including those of orders whose seller died, events relayed
 * and consumed) or `timeoutMs` passed, reading the audits again meanwhile; returns the last audits (a sale that did
 * not settle then fails its checks). Audit routes that do not answer (a process restarting) are retried.
 */
export async function settledAudits(
  urls: PaymentsUrls,
  saleId: string,
  adminToken: string,
  timeoutMs = 60_000,
): Promise<PaymentsAudits> {
  const giveUpAt = performance.now() + timeoutMs
  for (;;) {
    const audits = await readAudits(urls, saleId, adminToken).catch((error: unknown) => {
      if (performance.now() > giveUpAt) throw error
      return undefined
    })
    if (audits !== undefined && (isSettled(audits) || performance.now() > giveUpAt)) return audits
    await new Promise((resolve) => setTimeout(resolve, 100))
  }
}

const sum = (values: readonly number[]): number => values.reduce((a, b) => a + b, 0)

/**
 * The payment invariants of one sale. `oversold` counts kept units beyond the initial stock.
 *
 * @example
 * const { checks } = checkPayments(saleId, await settledAudits(urls, saleId, token), loadResult)
 */
export function checkPayments(
  saleId: string,
  a: PaymentsAudits,
  load: LoadResult,
): { checks: InvariantCheck[]; oversold: number; summary: PaymentsSummary } {
  const { orders } = a.orders
  const paid = orders.filter((o) => o.status === 'paid')
  const released = orders.filter((o) => o.status === 'released')
  const unsettled = orders.length - paid.length - released.length
  const paidIds = new Set(paid.map((o) => o.id))
  const saleOrderIds = new Set(orders.map((o) => o.id))
  const charges = a.payment.charges.filter((c) => c.sale_id === saleId || saleOrderIds.has(c.order_id))
  const standing = charges.filter((c) => c.status === 'charged')
  const charged = sum(standing.map((c) => c.amount))
  const keptValue = sum(paid.map((o) => o.amount ?? 0))
  const keptUnits = sum(paid.map((o) => o.quantity))
  const allCharged = sum(a.payment.charges.filter((c) => c.status === 'charged').map((c) => c.amount))
  const chargesPerOrder = new Map<string, number>()
  for (const c of standing) chargesPerOrder.set(c.order_id, (chargesPerOrder.get(c.order_id) ?? 0) + 1)
  const notes = a.notifier.notifications.filter((n) => saleOrderIds.has(n.orderId))
  const notesPerOrder = new Map<string, number>()
  for (const n of notes) notesPerOrder.set(n.orderId, (notesPerOrder.get(n.orderId) ?? 0) + 1)
  const users = new Set(orders.map((o) => o.userId))
  const toldPaidMissing = [...load.orderIds].filter((id) => !paidIds.has(id)).length
  const toldDeclinedKept = [...load.declinedIds].filter((id) => paidIds.has(id)).length
  const oversold = Math.max(0, keptUnits - a.orders.initial)
  const checks: InvariantCheck[] = [
    {
      name: 'every order settled (paid or released)',
      ok: unsettled === 0 && a.orders.unfinished === 0 && a.orders.parked === 0,
      detail: `${paid.length} paid, ${released.length} released, ${unsettled} open; sagas: ${a.orders.unfinished} running, ${a.orders.parked} parked`,
    },
    {
      name: 'money charged = value of orders kept',
      ok: charged === keptValue && a.payment.initialTotal - a.payment.balanceTotal === allCharged,
      detail: `charged ${charged}, orders kept worth ${keptValue}; balances down ${a.payment.initialTotal - a.payment.balanceTotal} = ${allCharged} charged (all sales)`,
    },
    {
      name: 'no payment without an order',
      ok: standing.every((c) => paidIds.has(c.order_id)),
      detail: `${standing.filter((c) => !paidIds.has(c.order_id)).length} standing charges without a kept order`,
    },
    {
      name: 'no order paid twice',
      ok: paid.every((o) => chargesPerOrder.get(o.id) === 1) && a.payment.accountsOff === 0,
      detail: `${paid.filter((o) => chargesPerOrder.get(o.id) !== 1).length} kept orders without exactly one charge, ${a.payment.accountsOff} accounts off their charges`,
    },
    {
      name: 'stock released for every failed payment',
      ok: keptUnits + a.orders.remaining === a.orders.initial && a.orders.minRemain >= 0,
      detail: `${released.length} released; kept ${keptUnits} + remaining ${a.orders.remaining} = ${keptUnits + a.orders.remaining} (initial ${a.orders.initial})`,
    },
    {
      name: 'every event consumed once',
      ok:
        a.orders.outboxUnsent === 0 &&
        paid.every((o) => notesPerOrder.get(o.id) === 1) &&
        notes.every((n) => paidIds.has(n.orderId)),
      detail: `${notes.length} notifications for ${paid.length} kept orders, ${a.orders.outboxUnsent} unsent; ${a.notifier.deliveries - a.notifier.notifications.length} duplicate deliveries absorbed (run)`,
    },
    {
      name: 'buyers told the truth, one order per user',
      ok: toldPaidMissing === 0 && toldDeclinedKept === 0 && users.size === orders.length && load.counts.doubled === 0,
      detail: `${toldPaidMissing} told paid but not kept, ${toldDeclinedKept} told declined but kept, ${orders.length - users.size} users with two orders`,
    },
    { name: 'oversold = 0', ok: oversold === 0, detail: `oversold ${oversold}` },
  ]
  return {
    checks,
    oversold,
    summary: {
      paid: paid.length,
      released: released.length,
      charged,
      notifications: notes.length,
      duplicateDeliveries: a.notifier.deliveries - a.notifier.notifications.length,
    },
  }
}
