import { fencedUpdate } from 'latchkey/fence'
import {
  auditFromOrders,
  newSale,
  type OrderRow,
  orderToWrite,
  SALE_COLUMNS,
  type SaleRow,
  splitStock,
  toSale,
} from './rows.js'
import type {
  BucketStock,
  BuyOutcome,
  OrderToWrite,
  RunBuyer,
  RunOutcome,
  RunResult,
  Sale,
  SaleAudit,
  SaleInput,
  SaleStore,
  SaleSummary,
} from './types.js'

/**
 * The statements every SQL store runs alike, with `?` placeholders (PostgreSQL numbers them with
 * {@link numbered}). Stores whose buy is one statement (PostgreSQL's CTEs) leave the write ones unused.
 */
export const STATEMENTS = {
  insertSale: `INSERT INTO fs_sales (${SALE_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?)`,
  insertBucket: 'INSERT INTO fs_stock (sale_id, bucket, remain) VALUES (?, ?, ?)',
  sale: 'SELECT * FROM fs_sales WHERE id = ?',
  /** Newest first; equal times by id (SQLite overrides the tie-break with insertion order). */
  recent: 'SELECT * FROM fs_sales ORDER BY created_at DESC, id LIMIT ?',
  orderIdOf: 'SELECT id FROM fs_orders WHERE sale_id = ? AND user_id = ?',
  buckets: 'SELECT bucket, remain FROM fs_stock WHERE sale_id = ? ORDER BY bucket',
  /** The buckets, each row with the user's order id (a scalar subquery, run once). Parameters: sale, user, sale. */
  buyerView:
    'SELECT bucket, remain, (SELECT id FROM fs_orders WHERE sale_id = ? AND user_id = ?) AS order_id FROM fs_stock WHERE sale_id = ? ORDER BY bucket',
  counts: 'SELECT COUNT(*) AS orders, COALESCE(SUM(quantity), 0) AS sold FROM fs_orders WHERE sale_id = ?',
  totals:
    'SELECT COALESCE(SUM(remain), 0) AS remaining, COALESCE(MIN(remain), 0) AS min_remain FROM fs_stock WHERE sale_id = ?',
  orders: 'SELECT id, user_id, quantity FROM fs_orders WHERE sale_id = ?',
  decrement: 'UPDATE fs_stock SET remain = remain - ? WHERE sale_id = ? AND bucket = 0 AND remain >= ?',
  insertOrder: 'INSERT INTO fs_orders (id, sale_id, user_id, quantity, bucket, created_at) VALUES (?, ?, ?, ?, ?, ?)',
  claim: 'UPDATE fs_stock SET fence_token = ? WHERE sale_id = ? AND bucket = ? AND fence_token <= ?',
  /** Parameters: remain, token, sale id, bucket, token (fencedUpdate's order: set values, token, where values, token). */
  fencedWrite: fencedUpdate({ table: 'fs_stock', set: { remain: 0 }, where: { sale_id: '', bucket: 0 }, token: 0n })
    .sql,
} as const

/**
 * `sql` with its `?` placeholders numbered `$1, $2, ...` for PostgreSQL.
 *
 * @example
 * numbered('SELECT * FROM t WHERE a = ? AND b = ?') // 'SELECT * FROM t WHERE a = $1 AND b = $2'
 */
export function numbered(sql: string): string {
  let n = 0
  return sql.replace(/\?/g, () => `$${++n}`)
}

/**
 * `pool` once `migrate` (the store's CREATE TABLE IF NOT EXISTS) has run on it. A failed migration ends the
 * pool before rethrowing, so a store that could not open leaves no socket behind.
 */
export async function migrated<P extends { end(): Promise<void> }>(pool: P, migrate: () => Promise<void>): Promise<P> {
  try {
    await migrate()
  } catch (error) {
    await pool.end()
    throw error
  }
  return pool
}

/** Runs one statement and returns its rows (drivers return BIGINT sums as strings; callers convert). */
export type Rows = <T>(sql: string, params: readonly unknown[]) => Promise<T[]>

/** The {@link SaleAudit} of a sale read through `rows`, which the caller runs inside one snapshot. */
export async function auditWith(rows: Rows, saleId: string): Promise<SaleAudit | undefined> {
  const [sale] = await rows<{ stock: number }>(STATEMENTS.sale, [saleId])
  if (sale === undefined) return undefined
  const [t] = await rows<{ remaining: number | string; min_remain: number | string }>(STATEMENTS.totals, [saleId])
  const totals = { remaining: Number(t?.remaining ?? 0), minRemain: Number(t?.min_remain ?? 0) }
  return auditFromOrders(sale.stock, totals, await rows<OrderRow>(STATEMENTS.orders, [saleId]))
}

/** One fenced order to commit: the stock write guarded by `token` and the order it pays for. */
export interface FencedOrder {
  readonly saleId: string
  readonly bucket: number
  readonly remain: number
  readonly token: bigint
  readonly userId: string
  readonly quantity: number
  readonly order: OrderToWrite
}

/**
 * What the SQL stores share: the reads and their row mapping. A store supplies how it runs a read
 * ({@link SqlSaleStore.rows}) and its writes, which differ in how each engine keeps them atomic.
 */
export abstract class SqlSaleStore implements SaleStore {
  abstract readonly name: string
  /** The statement behind {@link listSales}. */
  protected readonly recent: string = STATEMENTS.recent

  /** Runs one read statement outside any transaction. */
  protected abstract rows<T>(sql: string, params: readonly unknown[]): Promise<T[]>
  /** Writes `sale` and its buckets (`stock[i]` units in bucket i) in one transaction. */
  protected abstract insertSale(sale: Sale, stock: readonly number[]): Promise<void>
  /** The fenced stock write plus the order insert, in one transaction. */
  protected abstract writeFenced(write: FencedOrder): Promise<BuyOutcome>
  abstract buyAtomic(saleId: string, userId: string, quantity: number, order?: OrderToWrite): Promise<BuyOutcome>
  abstract claimBucket(saleId: string, bucket: number, token: bigint): Promise<number | undefined>
  abstract audit(saleId: string): Promise<SaleAudit | undefined>
  abstract close(): Promise<void>

  async createSale(input: SaleInput): Promise<Sale> {
    const sale = newSale(input)
    await this.insertSale(sale, splitStock(sale.stock, sale.buckets))
    return sale
  }

  async getSale(id: string): Promise<Sale | undefined> {
    const [row] = await this.rows<SaleRow>(STATEMENTS.sale, [id])
    return row === undefined ? undefined : toSale(row)
  }

  async summary(id: string): Promise<SaleSummary | undefined> {
    const [row] = await this.rows<SaleRow>(STATEMENTS.sale, [id])
    return row === undefined ? undefined : this.summarize(row)
  }

  async listSales(limit: number): Promise<SaleSummary[]> {
    const list = await this.rows<SaleRow>(this.recent, [limit])
    return Promise.all(list.map((row) => this.summarize(row)))
  }

  async orderIdOf(saleId: string, userId: string): Promise<string | undefined> {
    return (await this.rows<{ id: string }>(STATEMENTS.orderIdOf, [saleId, userId]))[0]?.id
  }

  buckets(saleId: string): Promise<BucketStock[]> {
    return this.rows<BucketStock>(STATEMENTS.buckets, [saleId])
  }

  async buyerView(saleId: string, userId: string): Promise<{ orderId: string | undefined; buckets: BucketStock[] }> {
    const rows = await this.rows<BucketStock & { order_id: string | null }>(STATEMENTS.buyerView, [
      saleId,
      userId,
      saleId,
    ])
    return { orderId: rows[0]?.order_id ?? undefined, buckets: rows.map(({ bucket, remain }) => ({ bucket, remain })) }
  }

  commitFenced(
    saleId: string,
    bucket: number,
    remain: number,
    token: bigint,
    userId: string,
    quantity: number,
  ): Promise<BuyOutcome> {
    return this.writeFenced({ saleId, bucket, remain, token, userId, quantity, order: orderToWrite(undefined) })
  }

  /**
   * Order by order, a transaction each (the network stores): the claim when `known` is undefined, then each
   * buyer's fenced write. Stops before the next write once `signal` is aborted (a lost lease), and at the first
   * stale or failed write; after a duplicate or a failed write the stock is claimed and read again (a write
   * that failed on the network may have committed).
   */
  async sellRun(
    saleId: string,
    bucket: number,
    token: bigint,
    known: number | undefined,
    buyers: readonly RunBuyer[],
    signal?: AbortSignal,
  ): Promise<RunResult> {
    const outcomes: RunOutcome[] = []
    let remain = known
    for (const { userId, quantity } of buyers) {
      if (signal?.aborted === true) break
      let outcome: BuyOutcome
      try {
        remain ??= await this.claimBucket(saleId, bucket, token)
        if (remain === undefined) outcome = { status: 'stale' }
        else if (remain < quantity) outcome = { status: 'sold-out' }
        else outcome = await this.commitFenced(saleId, bucket, remain - quantity, token, userId, quantity)
      } catch (error) {
        outcomes.push({ status: 'error', error })
        return { outcomes, remain: undefined }
      }
      outcomes.push(outcome)
      if (outcome.status === 'stale') return { outcomes, remain: undefined }
      if (outcome.status === 'ordered') remain = (remain as number) - quantity
      else if (outcome.status === 'duplicate') remain = undefined
    }
    return { outcomes, remain }
  }

  private async summarize(row: SaleRow): Promise<SaleSummary> {
    const [[t], [c]] = await Promise.all([
      this.rows<{ remaining: number | string }>(STATEMENTS.totals, [row.id]),
      this.rows<{ orders: number | string; sold: number | string }>(STATEMENTS.counts, [row.id]),
    ])
    return {
      ...toSale(row),
      remaining: Number(t?.remaining ?? 0),
      sold: Number(c?.sold ?? 0),
      orders: Number(c?.orders ?? 0),
    }
  }
}
