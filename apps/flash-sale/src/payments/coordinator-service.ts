/**
 * The `coordinator` process of a paid flash sale: latchkey-tx's coordinator (durable log, recovery under fenced
 * leases) driving one {@link ORDER_SAGA} per sold order, the outbox relay that publishes order-created events to
 * RabbitMQ, and a sweep that starts the saga of any order whose seller died before asking (the order row is
 * committed by the seller before the saga exists). HTTP: `POST /orders { orderId }` runs (or joins) the order's
 * saga and answers its outcome; `GET /audit?sale=ID` (admin token) the order side of the invariants.
 */

import Database from 'better-sqlite3'
import Fastify, { type FastifyInstance } from 'fastify'
import { backendFromUrl, createLocks, redactUrl } from 'latchkey'
import { type Coordinator, createCoordinator, isTxError, sqliteStore, type TxStatus, type TxStore } from 'latchkey-tx'
import { createOutbox, type OutboxRelay, rabbitPublisher } from 'latchkey-tx/outbox'
import { adminGuard, checkAdminToken } from '../server/admin-auth.js'
import { UNIT_PRICE } from './accounts.js'
import { OrderLedger } from './order-ledger.js'
import { defineOrderSaga, orderGid } from './order-saga.js'

/** Options of {@link startCoordinatorService}. */
export interface CoordinatorServiceOptions {
  /** The flash-sale store: `sqlite:PATH` (the order side lives next to the orders). */
  readonly storeUrl: string
  /** The coordinator's log (`sqlite:PATH`, `postgres://…`, `mysql://…`). */
  readonly logUrl: string
  /** The sellers' lock backend (`backendFromUrl`): releases of lock and sharded sales take the bucket's lock. */
  readonly backendUrl: string
  readonly paymentUrl: string
  /** RabbitMQ, e.g. `amqp://guest:guest@127.0.0.1:5672`. */
  readonly rabbitUrl: string
  /** Exchange the order-created events are published to. */
  readonly exchange: string
  readonly unitPrice?: number
  readonly host?: string
  readonly port?: number
  readonly adminToken?: string
  /** Lease on each transaction (and relay partition): how long a killed coordinator's work waits. Default 5 000. */
  readonly leaseTtlMs?: number
  /** An order older than this without a saga gets one from the sweep. Default 2 000. */
  readonly sweepAfterMs?: number
}

/** A running coordinator process. */
export interface RunningCoordinator {
  readonly url: string
  readonly tc: Coordinator
  close(): Promise<void>
}

const TERMINAL: readonly TxStatus[] = ['succeeded', 'failed', 'parked']

/** Checks options before any I/O. */
function check(options: CoordinatorServiceOptions): void {
  checkAdminToken(options.adminToken)
  if (!/^sqlite:/.test(options.storeUrl)) {
    throw new RangeError(
      `payments: the order side lives in the sale store, which must be SQLite for --payments today (sqlite:PATH), received ${redactUrl(options.storeUrl)}`,
    )
  }
  for (const name of ['logUrl', 'backendUrl', 'paymentUrl', 'rabbitUrl', 'exchange'] as const) {
    if (typeof options[name] !== 'string' || options[name].length === 0) {
      throw new TypeError(`payments: coordinator option ${name} must be a non-empty string`)
    }
  }
}

/**
 * Starts the coordinator process's parts and its HTTP API.
 *
 * @example
 * const c = await startCoordinatorService({ storeUrl: 'sqlite:./store.db', logUrl: 'sqlite:./tx.db',
 *   backendUrl: 'sqlite:./locks.db', paymentUrl, rabbitUrl: 'amqp://127.0.0.1', exchange: 'flash-sale' })
 */
export async function startCoordinatorService(options: CoordinatorServiceOptions): Promise<RunningCoordinator> {
  check(options)
  const unitPrice = options.unitPrice ?? UNIT_PRICE
  const leaseTtlMs = options.leaseTtlMs ?? 5_000
  const ledger = new OrderLedger(options.storeUrl.slice('sqlite:'.length).replace(/^\/\//, ''))
  const backend = await backendFromUrl(options.backendUrl)
  const locks = createLocks({ backend, namespace: 'flash-sale' })
  const tc = createCoordinator({
    store: logStore(options.logUrl),
    // A killed payment service is back within seconds; a longer outage parks the order for an operator.
    retry: { firstMs: 100, maxMs: 2_000, attempts: 40 },
    recoverEveryMs: 500,
    leaseTtlMs,
  })
  const outbox = createOutbox({ store: options.storeUrl })
  let relay: OutboxRelay | undefined
  let app: FastifyInstance | undefined
  let sweeper: NodeJS.Timeout | undefined
  const close = async (): Promise<void> => {
    clearInterval(sweeper)
    await app?.close()
    await tc.close()
    await relay?.close()
    await outbox.close()
    await locks.close()
    await backend.close()
    ledger.close()
  }
  try {
    // A loaded machine answers slowly: a short timeout only turns slow charges into repeated ones.
    const saga = defineOrderSaga(tc, { ledger, locks, outbox, paymentUrl: options.paymentUrl, callTimeoutMs: 10_000 })
    relay = outbox.relay({
      publisher: rabbitPublisher({
        url: options.rabbitUrl,
        exchange: options.exchange,
        connectionName: 'flash-sale-relay',
      }),
      pollMs: 100,
      leaseTtlMs,
    })
    /** Starts the saga of `orderId`, or waits for the one already started (by the seller or the sweep). */
    const settle = async (orderId: string, wait: boolean): Promise<TxStatus | 'unknown-order'> => {
      const input = ledger.input(orderId, unitPrice)
      if (input === undefined) return 'unknown-order'
      const gid = orderGid(orderId)
      try {
        return (await saga.run(input, { gid, wait })).status
      } catch (error) {
        if (!isTxError(error) || (error.code !== 'DUPLICATE_GID' && error.code !== 'TX_BUSY')) throw error
        return wait ? awaitOutcome(tc, gid, 10_000) : 'submitted'
      }
    }
    const sweepAfterMs = options.sweepAfterMs ?? 2_000
    let sweeping = false
    sweeper = setInterval(() => {
      if (sweeping) return
      sweeping = true
      void (async () => {
        for (const orderId of ledger.unrecorded(sweepAfterMs)) await settle(orderId, false).catch(() => undefined)
      })().finally(() => {
        sweeping = false
      })
    }, 500)
    app = Fastify({ logger: false })
    app.post<{ Body: { orderId: string } }>(
      '/orders',
      {
        schema: {
          body: {
            type: 'object',
            required: ['orderId'],
            additionalProperties: false,
            properties: { orderId: { type: 'string', minLength: 1, maxLength: 64, pattern: '^[A-Za-z0-9-]+$' } },
          },
        },
      },
      async (request, reply) => {
        const status = await settle(request.body.orderId, true)
        if (status === 'unknown-order') return reply.code(404).send({ code: 'UNKNOWN_ORDER' })
        return { orderId: request.body.orderId, status }
      },
    )
    app.get<{ Querystring: { sale: string } }>(
      '/audit',
      { onRequest: adminGuard(options.adminToken) },
      async (request, reply) => {
        const audit = ledger.audit(String(request.query.sale))
        if (audit === undefined) return reply.code(404).send({ code: 'UNKNOWN_SALE' })
        const count = async (status: TxStatus) => (await tc.list({ status, limit: 10_000 })).length
        return {
          ...audit,
          unfinished: (await count('submitted')) + (await count('aborting')),
          parked: await count('parked'),
        }
      },
    )
    app.get('/healthz', async () => ({ ok: true }))
    const url = await app.listen({ host: options.host ?? '127.0.0.1', port: options.port ?? 0 })
    return { url, tc, close }
  } catch (error) {
    await close()
    throw error
  }
}

/**
 * The coordinator's log. A SQLite log is opened here with `synchronous = NORMAL` (WAL): a transition survives a
 * killed process (kill -9), not a power cut, as the sale store does. latchkey-tx's default (FULL) fsyncs every
 * transition inside better-sqlite3's synchronous call: with a few dozen sagas in flight on a loaded 2-core
 * machine that blocked this process's event loop for seconds, its leases expired and recovery took sagas over.
 */
function logStore(url: string): TxStore | string {
  if (!url.startsWith('sqlite:')) return url
  const database = new Database(url.slice('sqlite:'.length).replace(/^\/\//, ''))
  database.pragma('journal_mode = WAL')
  database.pragma('synchronous = NORMAL')
  database.pragma('busy_timeout = 5000')
  return sqliteStore({ database })
}

/** Polls the log until `gid` is terminal or `timeoutMs` passed (then its current status). */
async function awaitOutcome(tc: Coordinator, gid: string, timeoutMs: number): Promise<TxStatus> {
  const giveUpAt = Date.now() + timeoutMs
  for (;;) {
    const status = (await tc.get(gid))?.status ?? 'submitted'
    if (TERMINAL.includes(status) || Date.now() > giveUpAt) return status
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
}
