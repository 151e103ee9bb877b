import Fastify, { type FastifyInstance } from 'fastify'
import type { Locks } from 'latchkey'
import type { PaymentsOptions } from '../payments/settle-client.js'
import type { Sale, SaleStore } from '../store/types.js'
import { BucketSellers } from '../strategies/bucket-sellers.js'
import type { BuyContext } from '../strategies/buy.js'
import type { OutboxRelay } from '../strategies/reserve/outbox-relay.js'
import type { RedisReserve } from '../strategies/reserve/redis-reserve.js'
import { checkAdminToken } from './admin-auth.js'
import { registerCeilingRoute } from './ceiling-route.js'
import { registerDashboardRoutes } from './dashboard-routes.js'
import type { ServiceMetrics } from './metrics.js'
import { registerOrderRoute } from './order-route.js'
import { registerSaleRoutes } from './sale-routes.js'

/** What {@link buildApp} serves. */
export interface AppOptions {
  readonly store: SaleStore
  readonly locks: Locks
  readonly metrics: ServiceMetrics
  /** Default 2 000: a buyer queued longer than this is told 503 (retry) rather than kept waiting. */
  readonly lockWaitMs?: number
  /** Default 5 000: how long a crashed holder can block an item before its lease expires. */
  readonly lockTtlMs?: number
  /** Fastify logger. Default off (the load test would drown in it). */
  readonly logger?: boolean
  /** The `reserve` strategy's Redis side. Default none: `reserve` sales are refused with 400. */
  readonly reserve?: RedisReserve | undefined
  /** This process's outbox relay, reported by `/healthz`. */
  readonly relay?: OutboxRelay | undefined
  /**
   * Bearer token required by `POST /sales` and `GET /sales/:id/audit` (at least 16 characters). Default none:
   * those routes answer 403 ADMIN_DISABLED. Buyers' routes never need it.
   */
  readonly adminToken?: string | undefined
  /** `/events` streams open at once; one more is answered 503. Default 200. */
  readonly maxEventStreams?: number
  /** Time between two `/events` updates (one store read per tick for all streams). Default 500. */
  readonly eventIntervalMs?: number
  /**
   * Sell paid orders: each sold order is paid through the coordinator's saga (payment service, stock released
   * when declined). Default none: an order is final once its stock is taken. `reserve` sales are refused then.
   */
  readonly payments?: PaymentsOptions | undefined
  /**
   * Also serve the ceiling probe (`POST /probe/ceiling/sales/:id/orders`, see ceiling-route.ts): a measuring
   * aid for the benchmark, never for buyers. Default false.
   */
  readonly ceilingProbe?: boolean
}

/** Throws a RangeError naming the first bad option (before any I/O of the caller). */
export function checkAppOptions(options: Pick<AppOptions, 'adminToken' | 'maxEventStreams' | 'eventIntervalMs'>): void {
  checkAdminToken(options.adminToken)
  const { maxEventStreams, eventIntervalMs } = options
  if (maxEventStreams !== undefined && (!Number.isInteger(maxEventStreams) || maxEventStreams < 0)) {
    throw new RangeError(`maxEventStreams must be an integer >= 0, received ${String(maxEventStreams)}`)
  }
  if (eventIntervalMs !== undefined && (!Number.isFinite(eventIntervalMs) || eventIntervalMs < 10)) {
    throw new RangeError(`eventIntervalMs must be a number >= 10, received ${String(eventIntervalMs)}`)
  }
}

/**
 * Builds the flash-sale HTTP service (not listening yet): `POST /sales`, `GET /sales`, `GET /sales/:id`,
 * `GET /sales/:id/audit`, `POST /sales/:id/orders`, `GET /metrics`, `GET /healthz`, and the live
 * dashboard (`GET /dashboard`, fed by server-sent events from `GET /events`, at most `maxEventStreams`).
 * `POST /sales` and the audit need `adminToken`.
 *
 * @example
 * const app = buildApp({ store: sqliteStore('./sale.db'), locks, metrics: createMetrics(), adminToken: process.env.FLASH_SALE_ADMIN_TOKEN })
 * await app.listen({ port: 3000 })
 */
export function buildApp(options: AppOptions): FastifyInstance {
  const { store, metrics, locks } = options
  checkAppOptions(options)
  const ctx: BuyContext = {
    store,
    locks,
    lockWaitMs: options.lockWaitMs ?? 2_000,
    lockTtlMs: options.lockTtlMs ?? 5_000,
    sellers: new BucketSellers(),
    reserve: options.reserve,
  }
  const app = Fastify({
    logger: options.logger ?? false,
    // Strict bodies: "5" is not a stock count, and unknown fields are typos to report, not to drop.
    ajv: { customOptions: { coerceTypes: false, removeAdditional: false, allowUnionTypes: true } },
  })
  // Sales never change once created, so each service keeps the ones it has seen.
  const sales = new Map<string, Sale>()
  const remember = (sale: Sale): void => {
    sales.set(sale.id, sale)
  }
  const findSale = async (id: string): Promise<Sale | undefined> => {
    const sale = sales.get(id) ?? (await store.getSale(id))
    if (sale !== undefined) remember(sale)
    return sale
  }
  app.get('/healthz', async () => ({
    ok: true,
    store: store.name,
    backend: locks.backend.name,
    ...(options.relay === undefined ? {} : { relay: options.relay.stats }),
  }))
  app.get('/metrics', async (_request, reply) => {
    reply.header('content-type', metrics.registry.contentType)
    return metrics.registry.metrics()
  })
  registerSaleRoutes(app, store, remember, options.reserve, options.adminToken, options.payments !== undefined)
  registerOrderRoute(app, ctx, metrics, findSale, options.payments)
  if (options.ceilingProbe === true) registerCeilingRoute(app)
  registerDashboardRoutes(app, store, metrics.live, {
    ...(options.maxEventStreams === undefined ? {} : { maxStreams: options.maxEventStreams }),
    ...(options.eventIntervalMs === undefined ? {} : { intervalMs: options.eventIntervalMs }),
  })
  return app
}
