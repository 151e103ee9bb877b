/** How a sale protects its stock. */
export type Strategy = 'db-atomic' | 'lock' | 'reserve' | 'sharded'

/** Every strategy; `reserve` is served only by a service given a Redis URL. */
export const STRATEGIES: readonly Strategy[] = Object.freeze(['db-atomic', 'lock', 'reserve', 'sharded'])

/** What `POST /sales` stores. */
export interface SaleInput {
  readonly item: string
  /** Units for sale. */
  readonly stock: number
  /** Epoch ms before which orders are refused with 425. */
  readonly startsAt: number
  readonly strategy: Strategy
  /** Stock buckets (1 unless the strategy is `sharded`). */
  readonly buckets: number
}

/** A sale as stored. Immutable once created, so services may cache it. */
export interface Sale extends SaleInput {
  readonly id: string
  readonly createdAt: number
}

/** A sale with its live counters, for `GET /sales/:id`. */
export interface SaleSummary extends Sale {
  /** Units not sold yet (sum over buckets). */
  readonly remaining: number
  /** Units sold (sum of order quantities). */
  readonly sold: number
  /** Number of orders. */
  readonly orders: number
}

/** The result of one buy attempt against the store. */
export type BuyOutcome =
  | { readonly status: 'ordered'; readonly orderId: string; readonly bucket: number }
  | { readonly status: 'sold-out' }
  | { readonly status: 'duplicate' }
  /** A fenced write was refused: a holder with a higher token touched the stock since our read. */
  | { readonly status: 'stale' }

/** One buyer of a run sold under one lease (see {@link SaleStore.sellRun}). */
export interface RunBuyer {
  readonly userId: string
  readonly quantity: number
}

/** What one buyer of a run was sold: an outcome, or the error its write failed with (nothing of it written). */
export type RunOutcome = BuyOutcome | { readonly status: 'error'; readonly error: unknown }

/** What {@link SaleStore.sellRun} did. */
export interface RunResult {
  /**
   * One per buyer served, in order. It may end early: at a `stale` (the fence refused that buyer's write;
   * nothing of it or of the buyers after it was written), or after an `error`.
   */
  readonly outcomes: readonly RunOutcome[]
  /** The bucket's stock after the run; undefined when it must be claimed and read again (a stale, an error). */
  readonly remain: number | undefined
}

/** The id and time of an order to write. */
export interface OrderToWrite {
  readonly id: string
  /** Epoch ms. */
  readonly createdAt: number
}

/** One stock bucket. */
export interface BucketStock {
  readonly bucket: number
  readonly remain: number
}

/** Everything the invariant checks need, read in one snapshot. */
export interface SaleAudit {
  readonly initial: number
  readonly remaining: number
  /** Lowest `remain` of any bucket (must be >= 0). */
  readonly minRemain: number
  /** Sum of order quantities. */
  readonly sold: number
  readonly orders: number
  /** Users holding more than one order in this sale (must be 0). */
  readonly usersWithSeveralOrders: number
  /** Every order id of this sale. */
  readonly orderIds: ReadonlySet<string>
}

/**
 * The durable side of the service. All methods are async so that network stores (MariaDB, PostgreSQL)
 * fit behind the same interface as the embedded SQLite one.
 */
export interface SaleStore {
  readonly name: string
  createSale(input: SaleInput): Promise<Sale>
  getSale(id: string): Promise<Sale | undefined>
  summary(id: string): Promise<SaleSummary | undefined>
  /** The `limit` most recently created sales, newest first, with their counters. */
  listSales(limit: number): Promise<SaleSummary[]>
  /** The id of the user's order in this sale, if any (one order per user per sale). */
  orderIdOf(saleId: string, userId: string): Promise<string | undefined>
  /** Unlocked read of every bucket. Stock only ever decreases, so a bucket seen short stays short. */
  buckets(saleId: string): Promise<BucketStock[]>
  /** {@link orderIdOf} and {@link buckets} in one read (one statement): what a buyer's pre-check needs. */
  buyerView(saleId: string, userId: string): Promise<{ orderId: string | undefined; buckets: BucketStock[] }>
  /**
   * The conditional decrement (`remain = remain - 1 WHERE remain >= 1`, no lock needed) plus the order insert, in one transaction: `sold-out` when the stock is
   * short, `duplicate` when the user has an order (or `order.id` exists). `order` defaults to a new id and now;
   * the `reserve` strategy's relay passes the id and time of the reservation it settles.
   */
  buyAtomic(saleId: string, userId: string, quantity: number, order?: OrderToWrite): Promise<BuyOutcome>
  /**
   * Fenced read: records `token` as the bucket's fence (if no higher token has been seen) and returns its
   * stock; `undefined` if a higher token got there first. Claiming at read time is what makes a later
   * fenced write safe for read-check-write (a fence on the write alone lets two overlapping holders both
   * write the value they read).
   */
  claimBucket(saleId: string, bucket: number, token: bigint): Promise<number | undefined>
  /**
   * Sells `buyers` in turn from one bucket under `token`: claims the bucket and reads its stock first when
   * `known` is undefined (else `known` is the stock as of this lease's last claim or write), then each buyer
   * gets `sold-out` (short), `duplicate` (has an order) or `ordered`, every stock write fenced by `token`.
   * A store may write the whole run in one transaction (SQLite: one commit for the run) or order by order; the
   * latter stops before its next write once `signal` (the lease's) is aborted.
   */
  sellRun(
    saleId: string,
    bucket: number,
    token: bigint,
    known: number | undefined,
    buyers: readonly RunBuyer[],
    signal?: AbortSignal,
  ): Promise<RunResult>
  /** Fenced write of `remain` plus the order insert, in one transaction; `stale` if the fence refused it. */
  commitFenced(
    saleId: string,
    bucket: number,
    remain: number,
    token: bigint,
    userId: string,
    quantity: number,
  ): Promise<BuyOutcome>
  audit(saleId: string): Promise<SaleAudit | undefined>
  close(): Promise<void>
}
