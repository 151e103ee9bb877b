import type { SaleStore } from '../../store/types.js'

/** One reservation as reserve.lua appended it to the outbox. */
export interface Reservation {
  readonly orderId: string
  readonly saleId: string
  readonly userId: string
  readonly quantity: number
  /** Epoch ms of the reservation (becomes the order's `created_at`). */
  readonly createdAt: number
}

/**
 * What settling a reservation did: `settled` (order written, stock decremented, in one transaction),
 * `already` (this very order was written before: a redelivery after a crash between commit and ack),
 * `short` (the store's stock could not cover it) or `conflict` (the user holds another order). The last two
 * mean Redis and the store disagree (Redis lost data, or two deployments share a key prefix).
 */
export type SettleOutcome = 'settled' | 'already' | 'short' | 'conflict'

/** Parses a stream entry's flat field list (`['order', id, 'sale', id, ...]`); undefined if malformed. */
export function parseReservation(fields: readonly string[]): Reservation | undefined {
  const map = new Map<string, string>()
  for (let i = 0; i + 1 < fields.length; i += 2) map.set(fields[i] as string, fields[i + 1] as string)
  const [orderId, saleId, userId] = [map.get('order'), map.get('sale'), map.get('user')]
  const quantity = Number(map.get('quantity'))
  const createdAt = Number(map.get('at'))
  if (orderId === undefined || saleId === undefined || userId === undefined) return undefined
  if (!Number.isInteger(quantity) || quantity < 1 || !Number.isFinite(createdAt)) return undefined
  return { orderId, saleId, userId, quantity, createdAt }
}

/**
 * Writes a reservation to the store, idempotently: the order (with the reservation's own id) and the stock
 * decrement commit together or not at all, and the orders' unique keys (id, and sale + user) make a second
 * attempt a no-op reported as `already`.
 *
 * @example
 * if ((await settleReservation(store, r)) === 'settled') console.log('written')
 */
export async function settleReservation(store: SaleStore, r: Reservation): Promise<SettleOutcome> {
  const order = { id: r.orderId, createdAt: r.createdAt }
  const outcome = await store.buyAtomic(r.saleId, r.userId, r.quantity, order)
  if (outcome.status === 'ordered') return 'settled'
  // Nothing was written: find out whether an earlier attempt wrote this order.
  const existing = await store.orderIdOf(r.saleId, r.userId)
  if (existing === r.orderId) return 'already'
  return existing === undefined ? 'short' : 'conflict'
}
