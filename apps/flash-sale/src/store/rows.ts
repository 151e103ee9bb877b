import { randomUUID } from 'node:crypto'
import type { OrderToWrite, Sale, SaleAudit, SaleInput, Strategy } from './types.js'

/** A `fs_sales` row as the drivers return it (PostgreSQL and MySQL return BIGINT columns as strings). */
export interface SaleRow {
  readonly id: string
  readonly item: string
  readonly stock: number
  readonly starts_at: number | string
  readonly strategy: string
  readonly buckets: number
  readonly created_at: number | string
}

/** An `fs_orders` row, as much of it as the audit needs. */
export interface OrderRow {
  readonly id: string
  readonly user_id: string
  readonly quantity: number
}

/** The `fs_sales` columns in insert order. */
export const SALE_COLUMNS = 'id, item, stock, starts_at, strategy, buckets, created_at'

/** The values of {@link SALE_COLUMNS} for `sale`. */
export function saleValues(sale: Sale): unknown[] {
  return [sale.id, sale.item, sale.stock, sale.startsAt, sale.strategy, sale.buckets, sale.createdAt]
}

/** A new sale from `input`: a short random id, created now. */
export function newSale(input: SaleInput): Sale {
  return Object.freeze({ ...input, id: randomUUID().slice(0, 8), createdAt: Date.now() })
}

/** `order` if given, else a new order id and now. */
export function orderToWrite(order: OrderToWrite | undefined): OrderToWrite {
  return order ?? { id: randomUUID(), createdAt: Date.now() }
}

/** A {@link Sale} from its row. */
export function toSale(row: SaleRow): Sale {
  return Object.freeze({
    id: row.id,
    item: row.item,
    stock: row.stock,
    startsAt: Number(row.starts_at),
    strategy: row.strategy as Strategy,
    buckets: row.buckets,
    createdAt: Number(row.created_at),
  })
}

/**
 * Splits `stock` over `buckets` as evenly as possible (the first buckets take the remainder).
 *
 * @example
 * splitStock(10, 4) // [3, 3, 2, 2]
 */
export function splitStock(stock: number, buckets: number): number[] {
  return Array.from({ length: buckets }, (_, i) => Math.floor(stock / buckets) + (i < stock % buckets ? 1 : 0))
}

/** The audit of a sale from its stock totals and its orders (all read in one snapshot by the caller). */
export function auditFromOrders(
  initial: number,
  totals: { remaining: number; minRemain: number },
  orders: readonly OrderRow[],
): SaleAudit {
  const perUser = new Map<string, number>()
  for (const o of orders) perUser.set(o.user_id, (perUser.get(o.user_id) ?? 0) + 1)
  return {
    initial,
    remaining: totals.remaining,
    minRemain: totals.minRemain,
    sold: orders.reduce((n, o) => n + Number(o.quantity), 0),
    orders: orders.length,
    usersWithSeveralOrders: [...perUser.values()].filter((n) => n > 1).length,
    orderIds: new Set(orders.map((o) => o.id)),
  }
}
