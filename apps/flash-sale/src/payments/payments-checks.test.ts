import { describe, expect, it } from 'vitest'
import type { LoadResult } from '../load/run-load.js'
import { zeroCounts } from '../load/types.js'
import { seededBalance, UNIT_PRICE } from './accounts.js'
import { checkPayments, type PaymentsAudits } from './payments-checks.js'

const PRICE = UNIT_PRICE

/** A settled sale of 3 units: o1 and o2 paid, o3 declined and released. */
function audits(): PaymentsAudits {
  return {
    orders: {
      initial: 3,
      remaining: 1,
      minRemain: 1,
      outboxUnsent: 0,
      unfinished: 0,
      parked: 0,
      orders: [
        { id: 'o1', userId: 'u1', quantity: 1, status: 'paid', amount: PRICE },
        { id: 'o2', userId: 'u2', quantity: 1, status: 'paid', amount: PRICE },
        { id: 'o3', userId: 'u3', quantity: 1, status: 'released', amount: PRICE },
      ],
    },
    payment: {
      accounts: 3,
      initialTotal: 10 * PRICE,
      balanceTotal: 8 * PRICE,
      accountsOff: 0,
      charges: [
        { order_id: 'o1', sale_id: 's', user_id: 'u1', amount: PRICE, status: 'charged' },
        { order_id: 'o2', sale_id: 's', user_id: 'u2', amount: PRICE, status: 'charged' },
      ],
    },
    notifier: {
      deliveries: 3,
      notifications: [
        { orderId: 'o1', messageId: 'm1' },
        { orderId: 'o2', messageId: 'm2' },
      ],
    },
  }
}

function load(): LoadResult {
  return {
    buyers: 3,
    counts: { ...zeroCounts(), ordered: 2, declined: 1 },
    elapsedMs: 1,
    latencies: new Float64Array(),
    orderIds: new Set(['o1', 'o2']),
    declinedIds: new Set(['o3']),
    samples: [],
    soldInMs: 1,
  }
}

function failing(a: PaymentsAudits, l = load()): string[] {
  return checkPayments('s', a, l)
    .checks.filter((c) => !c.ok)
    .map((c) => c.name)
}

describe('checkPayments', () => {
  it('passes a settled sale and counts one duplicate delivery absorbed', () => {
    const { checks, summary } = checkPayments('s', audits(), load())
    expect(checks.filter((c) => !c.ok)).toEqual([])
    expect(summary).toMatchObject({ paid: 2, released: 1, charged: 2 * PRICE, duplicateDeliveries: 1 })
  })

  it('fails a charge left standing for a released order', () => {
    const a = audits()
    const charges = [
      ...a.payment.charges,
      { order_id: 'o3', sale_id: 's', user_id: 'u3', amount: PRICE, status: 'charged' },
    ]
    const failed = failing({ ...a, payment: { ...a.payment, charges, balanceTotal: 7 * PRICE } })
    expect(failed).toContain('no payment without an order')
    expect(failed).toContain('money charged = value of orders kept')
  })

  it('fails a released order whose stock did not come back', () => {
    const a = audits()
    expect(failing({ ...a, orders: { ...a.orders, remaining: 0 } })).toEqual([
      'stock released for every failed payment',
    ])
  })

  it('fails an event consumed twice, and one never consumed', () => {
    const a = audits()
    const twice = [...a.notifier.notifications, { orderId: 'o1', messageId: 'm1-again' }]
    expect(failing({ ...a, notifier: { ...a.notifier, notifications: twice } })).toEqual(['every event consumed once'])
    const once = a.notifier.notifications.slice(0, 1)
    expect(failing({ ...a, notifier: { ...a.notifier, notifications: once } })).toEqual(['every event consumed once'])
  })

  it('fails an account debited twice for one order, an order left open, a buyer told declined whose order was kept', () => {
    const a = audits()
    expect(failing({ ...a, payment: { ...a.payment, accountsOff: 1 } })).toEqual(['no order paid twice'])
    const open = a.orders.orders.map((o) => (o.id === 'o2' ? { ...o, status: 'pending' } : o))
    expect(failing({ ...a, orders: { ...a.orders, orders: open } })).toContain('every order settled (paid or released)')
    expect(failing(a, { ...load(), declinedIds: new Set(['o1']) })).toEqual([
      'buyers told the truth, one order per user',
    ])
  })
})

describe('seededBalance', () => {
  it('gives about the poor share one cent less than a unit, the same for the same seed', () => {
    const balances = Array.from({ length: 10_000 }, (_, i) => seededBalance(i, { accounts: 10_000 }))
    const poor = balances.filter((b) => b < PRICE).length
    expect(poor).toBeGreaterThan(800)
    expect(poor).toBeLessThan(1_200)
    expect(seededBalance(42, { accounts: 1, seed: 7 })).toBe(seededBalance(42, { accounts: 1, seed: 7 }))
  })
})
