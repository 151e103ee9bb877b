/**
 * A measuring probe, off by default (`ceilingProbe` of the app, the service and the cluster): a twin of
 * `POST /sales/:id/orders` that answers 409 SOLD_OUT from memory, with no store, no lock and no metrics.
 *
 * Why it exists: the flash-sale benchmark reports each strategy's orders/s, but a figure alone does not say how
 * much of it the strategy costs and how much is HTTP (fastify, body parsing and schema validation, the JSON
 * answer, the load generator's own CPU on the same 2 cores). Sent the same load, this route gives the ceiling of
 * this machine with this load generator, so every strategy can be shown as a fraction of it, measured in the
 * same run. It is not part of the service's API: a real buyer never needs it, and nothing is sold through it.
 */
import type { FastifyInstance } from 'fastify'
import { refuse } from './replies.js'
import { orderSchema } from './schemas.js'

/** Where the probe listens: the order route's path under this prefix. */
export const CEILING_PREFIX = '/probe/ceiling'

/** Which route the load generator sends orders to: the real one, or the ceiling probe. */
export type OrderTarget = 'orders' | 'ceiling'

/**
 * The path the load generator posts an order of sale `saleId` to.
 *
 * @example
 * orderPath('s1', 'ceiling') // '/probe/ceiling/sales/s1/orders'
 */
export function orderPath(saleId: string, target: OrderTarget = 'orders'): string {
  const path = `/sales/${encodeURIComponent(saleId)}/orders`
  return target === 'ceiling' ? `${CEILING_PREFIX}${path}` : path
}

/**
 * Registers the probe: same params and body schema as the order route (so validation costs the same), the
 * same refusal body as a sold-out sale (so the answer is the same size), nothing else.
 */
export function registerCeilingRoute(app: FastifyInstance): void {
  app.post<{ Params: { id: string }; Body: { userId: string; quantity: number } }>(
    `${CEILING_PREFIX}/sales/:id/orders`,
    { schema: orderSchema },
    async (request, reply) => refuse(reply, 409, 'SOLD_OUT', `Sale ${request.params.id} is sold out`),
  )
}
