import type { FastifyInstance } from 'fastify'
import type { Backend, Locks } from 'latchkey'
import { backendFromUrl, createLocks } from 'latchkey'
import type { PaymentsOptions } from './payments/settle-client.js'
import { type AppOptions, buildApp, checkAppOptions } from './server/app.js'
import { createMetrics } from './server/metrics.js'
import { openStore } from './store/open-store.js'
import type { SaleStore } from './store/types.js'
import { type OpenReserve, openReserve, type ReserveOptions } from './strategies/reserve/open-reserve.js'

/** Options of {@link startService}. */
export interface ServiceOptions {
  /** Store URL. Default `sqlite:./flash-sale.db`. */
  readonly storeUrl?: string
  /** latchkey backend URL (`backendFromUrl`). Default `sqlite:./flash-sale-locks.db`. */
  readonly backendUrl?: string
  /** Default 127.0.0.1. */
  readonly host?: string
  /** Default 0 (any free port). */
  readonly port?: number
  /** Lease length of stock locks. Default 5 000. */
  readonly lockTtlMs?: number
  /** Longest wait for a stock lock before answering 503. Default 2 000. */
  readonly lockWaitMs?: number
  readonly logger?: boolean
  /**
   * Redis for the `reserve` strategy (`redis://host:6379/db`): the reserve script's data and the outbox this
   * process's relay settles into the store. Default none: `reserve` sales are refused.
   */
  readonly redisUrl?: string
  /** Key prefix and relay settings of the `reserve` strategy (see {@link ReserveOptions}). */
  readonly reserve?: ReserveOptions
  /** Bearer token of `POST /sales` and `GET /sales/:id/audit` (see {@link AppOptions.adminToken}). Default none. */
  readonly adminToken?: string
  /** `/events` streams open at once in this process. Default 200. */
  readonly maxEventStreams?: number
  /** Sell paid orders through the coordinator process (see {@link AppOptions.payments}). Default none. */
  readonly payments?: PaymentsOptions
  /** Serve the benchmark's ceiling probe (see {@link AppOptions.ceilingProbe}). Default false. */
  readonly ceilingProbe?: boolean
}

/** A running service. */
export interface RunningService {
  readonly app: FastifyInstance
  readonly store: SaleStore
  readonly locks: Locks
  readonly backend: Backend
  /** The `reserve` strategy's Redis side and relay, when `redisUrl` was given. */
  readonly reserve: OpenReserve | undefined
  readonly url: string
  readonly port: number
  /** Stops listening, releases held locks, closes the backend and the store. */
  close(): Promise<void>
}

/**
 * Opens the store and the lock backend, and starts the HTTP service.
 *
 * @example
 * const service = await startService({ storeUrl: 'sqlite:./sale.db', backendUrl: 'sqlite:./locks.db', port: 3000 })
 * console.log(service.url)
 * await service.close()
 */
export async function startService(options: ServiceOptions = {}): Promise<RunningService> {
  checkAppOptions(options)
  const { store, backend, reserve } = await openParts(options)
  const metrics = createMetrics()
  const locks = createLocks({ backend, namespace: 'flash-sale', onEvent: metrics.onLockEvent })
  const app = buildApp({
    store,
    locks,
    metrics,
    reserve: reserve?.reserve,
    relay: reserve?.relay,
    ...(options.lockTtlMs === undefined ? {} : { lockTtlMs: options.lockTtlMs }),
    ...(options.lockWaitMs === undefined ? {} : { lockWaitMs: options.lockWaitMs }),
    ...(options.logger === undefined ? {} : { logger: options.logger }),
    ...(options.adminToken === undefined ? {} : { adminToken: options.adminToken }),
    ...(options.maxEventStreams === undefined ? {} : { maxEventStreams: options.maxEventStreams }),
    ...(options.payments === undefined ? {} : { payments: options.payments }),
    ...(options.ceilingProbe === undefined ? {} : { ceilingProbe: options.ceilingProbe }),
  })
  const close = async (): Promise<void> => {
    await app.close()
    // After the app (no new reservations here), before the store (the relay writes to it).
    await reserve?.close()
    await locks.close()
    await backend.close()
    await store.close()
  }
  try {
    await app.listen({ host: options.host ?? '127.0.0.1', port: options.port ?? 0 })
  } catch (error) {
    await close()
    throw error
  }
  const address = app.server.address()
  const port = typeof address === 'object' && address !== null ? address.port : 0
  const host = options.host ?? '127.0.0.1'
  return { app, store, locks, backend, reserve, url: `http://${host}:${port}`, port, close }
}

/** Opens the store, the lock backend and (with a Redis URL) the reserve strategy; closes what opened on failure. */
async function openParts(
  options: ServiceOptions,
): Promise<{ store: SaleStore; backend: Backend; reserve: OpenReserve | undefined }> {
  const store = await openStore(options.storeUrl ?? 'sqlite:./flash-sale.db')
  let backend: Backend | undefined
  try {
    backend = await backendFromUrl(options.backendUrl ?? 'sqlite:./flash-sale-locks.db')
    const reserve =
      options.redisUrl === undefined ? undefined : await openReserve(options.redisUrl, store, options.reserve)
    return { store, backend, reserve }
  } catch (error) {
    await backend?.close()
    await store.close()
    throw error
  }
}
