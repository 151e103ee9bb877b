/** The seller's side of a paid order: ask the coordinator to run the order's saga and say how it ended. */

/** What the buyer is told about the payment of an order whose stock was taken. */
export type PaymentOutcome = 'paid' | 'declined' | 'pending'

/** Options of a service that sells paid orders (`--payments`). */
export interface PaymentsOptions {
  /** Base URL of the coordinator process. */
  readonly coordinatorUrl: string
  /** Longest wait for the saga's outcome before the buyer is told `pending`. Default 15 000. */
  readonly waitMs?: number
}

/**
 * Runs (or joins) the saga of `orderId` in the coordinator: `paid` (it succeeded), `declined` (the charge was
 * refused; the stock is released) or `pending` (no answer in time, or the coordinator is down: the saga, or the
 * coordinator's sweep for an order without one, settles it later).
 *
 * @example
 * const outcome = await settleOrder({ coordinatorUrl: 'http://127.0.0.1:4100' }, orderId)
 */
export async function settleOrder(options: PaymentsOptions, orderId: string): Promise<PaymentOutcome> {
  try {
    const response = await fetch(`${options.coordinatorUrl}/orders`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ orderId }),
      signal: AbortSignal.timeout(options.waitMs ?? 15_000),
    })
    if (!response.ok) return 'pending'
    const { status } = (await response.json()) as { status?: string }
    return status === 'succeeded' ? 'paid' : status === 'failed' ? 'declined' : 'pending'
  } catch {
    return 'pending'
  }
}
