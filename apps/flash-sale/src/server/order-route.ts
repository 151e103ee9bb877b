import type { FastifyInstance, FastifyReply } from 'fastify'
import { isLockError } from 'latchkey'
import { type PaymentsOptions, settleOrder } from '../payments/settle-client.js'
import type { BuyOutcome, Sale } from '../store/types.js'
import { BUY, type BuyContext, ReserveNotConfiguredError, StaleWriteError } from '../strategies/buy.js'
import { ReserveUnavailableError } from '../strategies/reserve/redis-reserve.js'
import type { RejectReason, ServiceMetrics } from './metrics.js'
import { refuse } from './replies.js'
import { orderSchema } from './schemas.js'

type OrderRequest = { Params: { id: string }; Body: { userId: string; quantity: number } }

/**
 * Errors worth a 503 + retry: lock waits that ran out, lost leases, fenced-off writes, a busy database, Redis
 * not answering (or not configured) for a reserve sale.
 */
function isBusy(error: unknown): boolean {
  if (error instanceof StaleWriteError || isLockError(error)) return true
  if (error instanceof ReserveUnavailableError || error instanceof ReserveNotConfiguredError) return true
  return (error as { code?: unknown } | null)?.code === 'SQLITE_BUSY'
}

const REFUSALS = {
  duplicate: { reason: 'duplicate', status: 409, code: 'ALREADY_ORDERED' },
  'sold-out': { reason: 'sold_out', status: 409, code: 'SOLD_OUT' },
} as const

/**
 * `POST /sales/:id/orders` -> 201 {orderId} | 404 | 409 SOLD_OUT | 409 ALREADY_ORDERED | 425 NOT_STARTED |
 * 503 BUSY (retry), with every answer counted in the metrics. With `payments`, a sold order is then paid through
 * the coordinator's saga: 201 `{ orderId, payment: 'paid' }`, 402 PAYMENT_DECLINED (the stock was released) or
 * 202 `{ orderId, payment: 'pending' }` (the coordinator settles it later).
 */
export function registerOrderRoute(
  app: FastifyInstance,
  ctx: BuyContext,
  metrics: ServiceMetrics,
  findSale: (id: string) => Promise<Sale | undefined>,
  payments?: PaymentsOptions,
): void {
  app.post<OrderRequest>('/sales/:id/orders', { schema: orderSchema }, async (request, reply) => {
    const started = process.hrtime.bigint()
    const seconds = (): number => Number(process.hrtime.bigint() - started) / 1e9
    const { userId, quantity } = request.body
    const sale = await findSale(request.params.id)
    const rejected = (reason: RejectReason, status: number, code: string, message: string): FastifyReply => {
      metrics.reject(sale?.strategy ?? 'none', reason, seconds())
      return refuse(reply, status, code, message)
    }
    if (sale === undefined) return rejected('unknown_sale', 404, 'UNKNOWN_SALE', `No sale ${request.params.id}`)
    const early = sale.startsAt - Date.now()
    if (early > 0) {
      reply.header('retry-after', Math.ceil(early / 1000))
      return rejected(
        'not_started',
        425,
        'NOT_STARTED',
        `Sale ${sale.id} starts at ${new Date(sale.startsAt).toISOString()}`,
      )
    }
    let outcome: BuyOutcome
    try {
      outcome = await BUY[sale.strategy](ctx, sale, userId, quantity)
    } catch (error) {
      if (!isBusy(error)) throw error
      reply.header('retry-after', 1)
      return rejected('unavailable', 503, 'BUSY', `Sale ${sale.id} is too busy right now, retry: ${String(error)}`)
    }
    if (outcome.status === 'ordered' && payments !== undefined) {
      const { orderId } = outcome
      const payment = await settleOrder(payments, orderId)
      if (payment === 'declined') {
        metrics.reject(sale.strategy, 'payment_declined', seconds())
        const message = `Payment of order ${orderId} was declined; its stock was released`
        // The order id goes back too: the buyer (and the load generator's checks) can tell which order it was.
        return reply
          .code(402)
          .send({ statusCode: 402, code: 'PAYMENT_DECLINED', error: 'Payment Required', message, orderId })
      }
      metrics.order(sale.strategy, seconds())
      return reply.code(payment === 'paid' ? 201 : 202).send({ orderId, payment })
    }
    if (outcome.status === 'ordered') {
      metrics.order(sale.strategy, seconds())
      return reply.code(201).send({ orderId: outcome.orderId })
    }
    if (outcome.status === 'stale') throw new Error('unreachable: strategies retry stale writes')
    const refusal = REFUSALS[outcome.status]
    const message =
      outcome.status === 'duplicate'
        ? `User ${userId} already ordered in sale ${sale.id}`
        : `Sale ${sale.id} is sold out`
    return rejected(refusal.reason, refusal.status, refusal.code, message)
  })
}
