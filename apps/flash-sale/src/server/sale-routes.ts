import type { FastifyInstance } from 'fastify'
import type { Sale, SaleStore, Strategy } from '../store/types.js'
import { badRequest, refuse } from './replies.js'
import { createSaleSchema, saleSchema } from './schemas.js'

interface CreateSaleBody {
  item: string
  stock: number
  startsAt?: number | string
  strategy: Strategy
  buckets?: number
}

/** Epoch ms from the body's `startsAt` (default now); undefined when it is not a date. */
function parseStartsAt(value: number | string | undefined): number | undefined {
  if (value === undefined) return Date.now()
  if (typeof value === 'number') return value
  const ms = Date.parse(value)
  return Number.isNaN(ms) ? undefined : ms
}

/**
 * `POST /sales`, `GET /sales/:id` and `GET /sales/:id/audit`. `remember` receives each created sale
 * (the order route caches sales: they never change once created).
 */
export function registerSaleRoutes(app: FastifyInstance, store: SaleStore, remember: (sale: Sale) => void): void {
  app.post<{ Body: CreateSaleBody }>('/sales', { schema: createSaleSchema }, async (request, reply) => {
    const body = request.body
    const startsAt = parseStartsAt(body.startsAt)
    if (startsAt === undefined) {
      return badRequest(
        reply,
        `body/startsAt must be epoch milliseconds or an ISO 8601 date-time, received ${JSON.stringify(body.startsAt)}`,
      )
    }
    // Sharded sales default to 8 buckets (fewer for tiny stock, so none starts empty).
    const buckets = body.buckets ?? (body.strategy === 'sharded' ? Math.min(8, body.stock) : 1)
    if (body.strategy !== 'sharded' && buckets !== 1) {
      return badRequest(
        reply,
        `body/buckets applies to the sharded strategy only (received ${buckets} with ${body.strategy})`,
      )
    }
    const sale = await store.createSale({
      item: body.item,
      stock: body.stock,
      startsAt,
      strategy: body.strategy,
      buckets,
    })
    remember(sale)
    return reply.code(201).send(sale)
  })

  app.get<{ Params: { id: string } }>('/sales/:id', { schema: saleSchema }, async (request, reply) => {
    const summary = await store.summary(request.params.id)
    if (summary === undefined) return refuse(reply, 404, 'UNKNOWN_SALE', `No sale ${request.params.id}`)
    return summary
  })

  // Everything the load generator's invariant checks need, read from the store in one snapshot.
  app.get<{ Params: { id: string } }>('/sales/:id/audit', { schema: saleSchema }, async (request, reply) => {
    const audit = await store.audit(request.params.id)
    if (audit === undefined) return refuse(reply, 404, 'UNKNOWN_SALE', `No sale ${request.params.id}`)
    return { ...audit, orderIds: [...audit.orderIds] }
  })
}
