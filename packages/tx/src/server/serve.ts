/**
 * `latchkey-tx serve`: a coordinator on a store, its DTM-compatible HTTP API, metrics and health, until
 * SIGINT/SIGTERM. Unfinished transactions in the store (a previous server was killed) are resumed at start.
 */
import type { AddressInfo } from 'node:net'
import { createCoordinator } from '../coordinator/coordinator.js'
import { DtmService } from './dtm-service.js'
import { createTxHttpServer } from './http-server.js'
import { createTxMetrics } from './metrics.js'

/** Options of {@link serve}. */
export interface ServeOptions {
  readonly store: string
  readonly port: number
  readonly host?: string
  readonly retry?: { firstMs?: number; maxMs?: number; attempts?: number }
  readonly leaseTtlMs?: number
  readonly recoverEveryMs?: number
  readonly defaultTimeoutToFailS?: number
  /** How often sagas accepted by other servers on the store are looked for. Default 5 x recoverEveryMs, >= 1 s. */
  readonly adoptEveryMs?: number
}

/** A running server. */
export interface RunningServer {
  readonly port: number
  close(): Promise<void>
}

/** Starts the service; resolves once it listens (after resuming what the store holds). */
export async function serve(options: ServeOptions): Promise<RunningServer> {
  const metrics = createTxMetrics()
  const tc = createCoordinator({
    store: options.store,
    ...(options.retry === undefined ? {} : { retry: options.retry }),
    ...(options.leaseTtlMs === undefined ? {} : { leaseTtlMs: options.leaseTtlMs }),
    ...(options.recoverEveryMs === undefined ? {} : { recoverEveryMs: options.recoverEveryMs }),
    // A DTM TCC's try phase is the application's: its deadline is the request's timeout_to_fail, checked by
    // the service; the coordinator's own forward deadline must not cut it shorter.
    timeoutMs: 7 * 24 * 3600 * 1000,
    onEvent: metrics.onEvent,
  })
  const service = new DtmService(tc, {
    ...(options.defaultTimeoutToFailS === undefined ? {} : { defaultTimeoutToFailS: options.defaultTimeoutToFailS }),
  })
  await service.adopt()
  await tc.recoverNow()
  // Sagas accepted by another server on the same store have shapes this one has not seen: adopt them, so that
  // this server's recovery can finish them if that server dies.
  const adopting = setInterval(
    () => void service.adopt().catch(() => undefined),
    options.adoptEveryMs ?? Math.max(1_000, (options.recoverEveryMs ?? 1_000) * 5),
  )
  adopting.unref()
  const server = createTxHttpServer(service, tc, metrics.registry)
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject)
    server.listen(options.port, options.host ?? '0.0.0.0', () => resolve())
  })
  return {
    port: (server.address() as AddressInfo).port,
    close: async () => {
      clearInterval(adopting)
      await new Promise<void>((resolve) => server.close(() => resolve()))
      server.closeAllConnections()
      await tc.close()
    },
  }
}
