/** What the parent sends a buyer worker. */
export interface BuyerJob {
  readonly type: 'start'
  readonly urls: readonly string[]
  readonly saleId: string
  /** The path orders are posted to (the order route, or the ceiling probe: server/ceiling-route.ts). */
  readonly path: string
  /** Buyers `from` (inclusive) to `to` (exclusive); buyer i is user `u<i>`. */
  readonly from: number
  readonly to: number
  /** Requests in flight in this worker. */
  readonly concurrency: number
  /** Share of buyers who send their order twice (the second must be refused). */
  readonly duplicateRate: number
  readonly quantity: number
}

/** Counts a buyer worker reports. */
export interface BuyerCounts {
  /** 201 answers. */
  ordered: number
  /** 409 SOLD_OUT. */
  soldOut: number
  /** 409 ALREADY_ORDERED to a deliberate second order. */
  duplicates: number
  /** Orders whose 201 was lost with a dead connection, confirmed by a retry's ALREADY_ORDERED. */
  recovered: number
  /** A second order of a user that was accepted (must stay 0). */
  doubled: number
  /** 402 PAYMENT_DECLINED (paid sales): the stock was taken, the payment refused, the stock released. */
  declined: number
  /** 202 (paid sales): stock taken, payment not settled when answered (the coordinator settles it later). */
  pending: number
  /** 503 answers (retried). */
  busy: number
  /** Connection failures (retried on the next service). */
  networkErrors: number
  /** Buyers who got no definite answer after every retry, or an unexpected status. */
  failed: number
  /** HTTP requests sent. */
  requests: number
}

/** The buyer worker's last message. */
export interface BuyerReport {
  readonly type: 'result'
  readonly counts: BuyerCounts
  /** Milliseconds per HTTP request that got an answer. */
  readonly latencies: Float64Array
  /** Order ids of every 201. */
  readonly orderIds: string[]
  /** Order ids of every 402 PAYMENT_DECLINED (paid sales). */
  readonly declinedIds: string[]
  /** Epoch ms of this worker's last 201 (0 if none): when the stock ran out, seen from the buyers. */
  readonly lastOrderAt: number
  /** Unexpected answers, at most a few, for the report. */
  readonly samples: string[]
}

/**
 * A buyer worker's first message, once its modules are loaded: the load's clock starts when every worker has
 * sent it, so the seconds a process takes to start (tsx compiling on a loaded machine) are not counted as
 * the service's.
 */
export interface BuyerReady {
  readonly type: 'ready'
}

/** Progress every ~200 ms. */
export interface BuyerProgress {
  readonly type: 'progress'
  readonly done: number
}

/** A zeroed {@link BuyerCounts}. */
export function zeroCounts(): BuyerCounts {
  return {
    ordered: 0,
    soldOut: 0,
    duplicates: 0,
    recovered: 0,
    declined: 0,
    pending: 0,
    doubled: 0,
    busy: 0,
    networkErrors: 0,
    failed: 0,
    requests: 0,
  }
}
