import { checkPayments, type PaymentsUrls, settledAudits } from '../payments/payments-checks.js'
import type { Strategy } from '../store/types.js'
import { checkInvariants } from './invariants.js'
import type { ResultRow } from './report.js'
import { progressLine } from './report.js'
import { type LoadOptions, runLoad } from './run-load.js'
import { createSale, getAudit, waitSettled } from './sale-client.js'

/** Options of {@link runSale}. */
export interface SaleRunOptions extends Omit<LoadOptions, 'saleId' | 'onProgress'> {
  readonly strategy: Strategy
  /** Units for sale. Default 100. */
  readonly stock?: number
  /** Buckets of a sharded sale (service default when unset). */
  readonly buckets?: number
  /** Draw a progress bar on stderr when it is a TTY, else one line at the end. Default true. */
  readonly progress?: boolean
  /** Sale id to load instead of creating one. */
  readonly saleId?: string
  /** Called with buyers done, e.g. to inject a fault mid-sale. */
  readonly onProgress?: (done: number, total: number) => void
  /** The services' admin token, for creating the sale and reading its audit. */
  readonly adminToken?: string
  /**
   * A paid sale: where the payments stack serves its audits. The checks are then the payment invariants
   * (after every saga settled), in place of the unpaid ones (a released order's units are sold again).
   */
  readonly payments?: PaymentsUrls
}

/**
 * Creates a sale, sends the buyers at it, and checks the invariants in the store afterwards.
 *
 * @example
 * const row = await runSale({ urls: cluster.urls, strategy: 'lock', stock: 100, buyers: 10_000 })
 */
export async function runSale(options: SaleRunOptions): Promise<ResultRow> {
  const [first] = options.urls
  if (first === undefined) throw new RangeError('runSale needs at least one service URL')
  const stock = options.stock ?? 100
  const saleId =
    options.saleId ??
    (
      await createSale(
        first,
        {
          item: `demo-${options.strategy}`,
          stock,
          strategy: options.strategy,
          ...(options.buckets === undefined ? {} : { buckets: options.buckets }),
        },
        options.adminToken,
      )
    ).id
  const tty = process.stderr.isTTY === true && options.progress !== false
  const started = performance.now()
  const result = await runLoad({
    ...options,
    saleId,
    onProgress: (done, total) => {
      if (tty) process.stderr.write(progressLine(options.strategy, done, total, started))
      options.onProgress?.(done, total)
    },
  })
  if (tty) process.stderr.write('\n')
  else if (options.progress !== false) {
    process.stderr.write(`${progressLine(options.strategy, result.buyers, result.buyers, started).slice(1)}\n`)
  }
  if (options.payments !== undefined) {
    if (options.adminToken === undefined) throw new RangeError('runSale: a paid sale needs the admin token')
    const audits = await settledAudits(options.payments, saleId, options.adminToken)
    const { checks, oversold, summary } = checkPayments(saleId, audits, result)
    return { label: options.strategy, result, checks, oversold, payments: summary }
  }
  // Any surviving service can answer the audit (a fault test may have killed some).
  await firstAnswer(options.urls, (url) => waitSettled(url, saleId))
  const audit = await firstAnswer(options.urls, (url) => getAudit(url, saleId, options.adminToken))
  const quantity = options.quantity ?? 1
  const checks = checkInvariants(audit, result, quantity)
  const oversold = Math.max(0, audit.sold - audit.initial)
  return { label: options.strategy, result, checks, oversold }
}

async function firstAnswer<T>(urls: readonly string[], fn: (url: string) => Promise<T>): Promise<T> {
  let lastError: unknown
  for (const url of urls) {
    try {
      return await fn(url)
    } catch (error) {
      lastError = error
    }
  }
  throw lastError
}
