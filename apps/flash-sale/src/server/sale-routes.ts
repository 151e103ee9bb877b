import type { FastifyInstance } from 'fastify'
import type { Sale, SaleInput, SaleStore, Strategy } from '../store/types.js'
import type { RedisReserve, ReservedView } from '../strategies/reserve/redis-reserve.js'
import { adminGuard } from './admin-auth.js'
import { badRequest, refuse } from './replies.js'
import { createSaleSchema, LIMITS, saleSchema } from './schemas.js'

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

/** The Redis view of a reserve sale, and how many of its reservations the store has not settled yet. */
export interface ReservedSummary extends ReservedView {
  readonly unsettled: number
}

/**
 * The Redis view of a reserve sale next to `settledOrders`, the store's count. Read the store FIRST: both
 * counts only grow and a reservation is settled only after it was made, so read in this order the difference
 * is never negative (0 once the relay has drained the outbox).
 */
async function reservedSummary(reserve: RedisReserve, sale: Sale, settledOrders: number): Promise<ReservedSummary> {
  const view = await reserve.view(sale)
  return { ...view, unsettled: view.orders - settledOrders }
}

/** What `POST /sales` creates from a valid body, or the 400 message that refuses it. */
function saleInput(body: CreateSaleBody, hasReserve: boolean, paid: boolean): SaleInput | string {
  if (body.strategy === 'reserve' && paid) {
    // A declined payment gives the stock back to the store; a reserve sale's stock lives in Redis.
    return 'body/strategy reserve cannot be sold with payments (releasing its Redis stock is not built)'
  }
  if (body.strategy === 'reserve' && !hasReserve) {
    return 'body/strategy reserve needs a service started with Redis (--redis redis://host:6379)'
  }
  const startsAt = parseStartsAt(body.startsAt)
  if (startsAt === undefined) {
    return `body/startsAt must be epoch milliseconds or an ISO 8601 date-time, received ${JSON.stringify(body.startsAt)}`
  }
  const latest = Date.now() + LIMITS.maxStartsAheadMs
  if (startsAt < LIMITS.earliestStartsAt || startsAt > latest) {
    // A date outside this range is a typo (an extra zero, a sign), and one beyond what Date can show
    // (1e20) broke every later answer that prints it.
    return `body/startsAt must be between ${new Date(LIMITS.earliestStartsAt).toISOString()} and one year from now (${new Date(latest).toISOString()}), received ${JSON.stringify(body.startsAt)}`
  }
  // Sharded sales default to 8 buckets (fewer for tiny stock, so none starts empty).
  const buckets = body.buckets ?? (body.strategy === 'sharded' ? Math.min(8, body.stock) : 1)
  if (body.strategy !== 'sharded' && buckets !== 1) {
    return `body/buckets applies to the sharded strategy only (received ${buckets} with ${body.strategy})`
  }
  return { item: body.item, stock: body.stock, startsAt, strategy: body.strategy, buckets }
}

/**
 * `POST /sales`, `GET /sales/:id` and `GET /sales/:id/audit`; the first and the last (it lists every order id)
 * need `adminToken` (see {@link adminGuard}). `remember` receives each created sale
 * (the order route caches sales: they never change once created). For a `reserve` sale both reads add
 * `reserved`, the Redis view (what buyers were promised); their other counters are the store's settled view.
 */
export function registerSaleRoutes(
  app: FastifyInstance,
  store: SaleStore,
  remember: (sale: Sale) => void,
  reserve: RedisReserve | undefined,
  adminToken: string | undefined,
  paid = false,
): void {
  // onRequest: the token is checked before the body is even parsed, so a stranger learns nothing from a 400.
  const onRequest = adminGuard(adminToken)
  app.post<{ Body: CreateSaleBody }>('/sales', { schema: createSaleSchema, onRequest }, async (request, reply) => {
    const input = saleInput(request.body, reserve !== undefined, paid)
    if (typeof input === 'string') return badRequest(reply, input)
    const sale = await store.createSale(input)
    remember(sale)
    return reply.code(201).send(sale)
  })

  app.get<{ Params: { id: string } }>('/sales/:id', { schema: saleSchema }, async (request, reply) => {
    const summary = await store.summary(request.params.id)
    if (summary === undefined) return refuse(reply, 404, 'UNKNOWN_SALE', `No sale ${request.params.id}`)
    if (summary.strategy !== 'reserve' || reserve === undefined) return summary
    return { ...summary, reserved: await reservedSummary(reserve, summary, summary.orders) }
  })

  // Everything the load generator's invariant checks need, read from the store in one snapshot.
  app.get<{ Params: { id: string } }>('/sales/:id/audit', { schema: saleSchema, onRequest }, async (request, reply) => {
    const audit = await store.audit(request.params.id)
    if (audit === undefined) return refuse(reply, 404, 'UNKNOWN_SALE', `No sale ${request.params.id}`)
    const body = { ...audit, orderIds: [...audit.orderIds] }
    const sale = await store.getSale(request.params.id)
    if (sale?.strategy !== 'reserve' || reserve === undefined) return body
    return { ...body, reserved: await reservedSummary(reserve, sale, audit.orders) }
  })
}
