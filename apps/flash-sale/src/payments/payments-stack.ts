/**
 * The processes a paid sale needs beside the sellers: the payment service (own database), the coordinator (log,
 * sagas, outbox relay, sweep) and the notifier (RabbitMQ consumer with an inbox). Each is a child process that a
 * test may SIGKILL and {@link PaymentsStack.restart} on the same port.
 */
import type { ChildProcess } from 'node:child_process'
import { randomUUID } from 'node:crypto'
import { join } from 'node:path'
import amqp from 'amqplib'
import { redactUrl } from 'latchkey'
import { exited, forkEntry, nextMessage } from '../fork.js'
import { UNIT_PRICE } from './accounts.js'
import type { PaymentsWorkerStart } from './payments-worker.js'
import { dialectOf } from './sql-handle.js'

/** Where RabbitMQ is unless told: the machine's broker (scripts/servers/rabbitmq.sh starts one). */
export const DEFAULT_RABBIT_URL = process.env.LATCHKEY_RABBITMQ_URL ?? 'amqp://guest:guest@127.0.0.1:5672'

/** The roles of the stack's processes. */
export type PaymentsRole = 'payment' | 'coordinator' | 'notifier'

/** Options of {@link startPaymentsStack}. */
export interface PaymentsStackOptions {
  /** A folder for the SQLite files (payments DB by default, coordinator log, notifier DB). */
  readonly dir: string
  /** The flash-sale store the sellers use (`sqlite:PATH`). */
  readonly storeUrl: string
  /** The sellers' lock backend URL. */
  readonly backendUrl: string
  /** The payment service's database. Default `sqlite:<dir>/payments.db`. */
  readonly paymentDbUrl?: string
  /** Default {@link DEFAULT_RABBIT_URL}. */
  readonly rabbitUrl?: string
  /** Accounts `u0..u<n-1>` to seed (the buyers). */
  readonly accounts: number
  /** Share of accounts that cannot pay for one unit, in percent. Default 10. */
  readonly poorPercent?: number
  readonly seed?: number
  readonly unitPrice?: number
  /** Admin token of the three audits. */
  readonly adminToken: string
  /** Coordinator and relay lease TTL (how long a killed coordinator's work waits). Default 5 000. */
  readonly leaseTtlMs?: number
}

/** A running payments stack. */
export interface PaymentsStack {
  readonly paymentUrl: string
  readonly coordinatorUrl: string
  readonly notifierUrl: string
  readonly unitPrice: number
  /** The live child of each role (replaced by {@link restart}). */
  child(role: PaymentsRole): ChildProcess
  /** SIGKILLs the role's process and waits for its exit. */
  kill(role: PaymentsRole): Promise<void>
  /** Starts the role again on its port (after a kill). */
  restart(role: PaymentsRole): Promise<void>
  /** Stops every process, deletes the broker objects and, for a server database, the run's payment tables. */
  close(): Promise<void>
}

/**
 * Starts the payment service and the notifier, then the coordinator (it needs the payment service's URL).
 *
 * @example
 * const stack = await startPaymentsStack({ dir, storeUrl, backendUrl, accounts: 10_000, adminToken })
 * const cluster = await startCluster({ ..., payments: { coordinatorUrl: stack.coordinatorUrl } })
 */
export async function startPaymentsStack(options: PaymentsStackOptions): Promise<PaymentsStack> {
  const run = randomUUID().slice(0, 8)
  const rabbitUrl = options.rabbitUrl ?? DEFAULT_RABBIT_URL
  const paymentDbUrl = options.paymentDbUrl ?? `sqlite:${join(options.dir, 'payments.db')}`
  dialectOf(paymentDbUrl)
  // A server database may be shared: this run's tables get a prefix of their own, dropped by close().
  const tablePrefix = paymentDbUrl.startsWith('sqlite:') ? 'fs_pay_' : `fs_pay_${run}_`
  const exchange = `flash-sale-${run}`
  const queue = `flash-sale-notify-${run}`
  const unitPrice = options.unitPrice ?? UNIT_PRICE
  const starts: Record<PaymentsRole, (port: number, paymentUrl: string) => PaymentsWorkerStart> = {
    payment: (port) => ({
      type: 'start',
      role: 'payment',
      options: {
        dbUrl: paymentDbUrl,
        tablePrefix,
        port,
        adminToken: options.adminToken,
        seed: {
          accounts: options.accounts,
          unitPrice,
          ...(options.poorPercent === undefined ? {} : { poorPercent: options.poorPercent }),
          ...(options.seed === undefined ? {} : { seed: options.seed }),
        },
      },
    }),
    notifier: (port) => ({
      type: 'start',
      role: 'notifier',
      options: {
        dbUrl: `sqlite:${join(options.dir, 'notify.db')}`,
        rabbitUrl,
        exchange,
        queue,
        port,
        adminToken: options.adminToken,
      },
    }),
    coordinator: (port, paymentUrl) => ({
      type: 'start',
      role: 'coordinator',
      options: {
        storeUrl: options.storeUrl,
        logUrl: `sqlite:${join(options.dir, 'tx.db')}`,
        backendUrl: options.backendUrl,
        paymentUrl,
        rabbitUrl,
        exchange,
        unitPrice,
        port,
        adminToken: options.adminToken,
        leaseTtlMs: options.leaseTtlMs ?? 5_000,
      },
    }),
  }
  const children = new Map<PaymentsRole, ChildProcess>()
  const urls = new Map<PaymentsRole, string>()
  const launch = async (role: PaymentsRole, port: number): Promise<string> => {
    const child = forkEntry('payments/payments-worker.ts', [])
    children.set(role, child)
    child.send(starts[role](port, urls.get('payment') ?? ''))
    const ready = await nextMessage(child, (m) =>
      (m as { type?: string }).type === 'ready' ? (m as { url: string }) : undefined,
    )
    urls.set(role, ready.url)
    return ready.url
  }
  const stop = async (child: ChildProcess): Promise<void> => {
    if (child.exitCode !== null || child.signalCode !== null) return
    if (child.connected) child.send({ type: 'shutdown' })
    else child.kill('SIGTERM')
    const timer = setTimeout(() => child.kill('SIGKILL'), 5_000)
    await exited(child)
    clearTimeout(timer)
  }
  const cleanup = async (): Promise<void> => {
    await Promise.all([...children.values()].map(stop))
    await deleteBrokerObjects(rabbitUrl, exchange, queue).catch(() => undefined)
    if (!paymentDbUrl.startsWith('sqlite:')) {
      const { openPaymentDb, dropPaymentTables } = await import('./payment-db.js')
      const db = await openPaymentDb(paymentDbUrl, tablePrefix)
      await dropPaymentTables(db).finally(() => db.close())
    }
  }
  try {
    await Promise.all([launch('payment', 0), launch('notifier', 0)])
    await launch('coordinator', 0)
  } catch (error) {
    await cleanup()
    throw new Error(`payments stack did not start (RabbitMQ at ${redactUrl(rabbitUrl)}?): ${String(error)}`, {
      cause: error,
    })
  }
  const portOf = (role: PaymentsRole): number => Number(new URL(urls.get(role) as string).port)
  const child = (role: PaymentsRole): ChildProcess => children.get(role) as ChildProcess
  return {
    paymentUrl: urls.get('payment') as string,
    coordinatorUrl: urls.get('coordinator') as string,
    notifierUrl: urls.get('notifier') as string,
    unitPrice,
    child,
    async kill(role) {
      child(role).kill('SIGKILL')
      await exited(child(role))
    },
    async restart(role) {
      await launch(role, portOf(role))
    },
    close: cleanup,
  }
}

/** Deletes the run's queue and exchange (RabbitMQ is shared). */
async function deleteBrokerObjects(url: string, exchange: string, queue: string): Promise<void> {
  const conn = await amqp.connect(url)
  try {
    const channel = await conn.createChannel()
    await channel.deleteQueue(queue)
    await channel.deleteExchange(exchange)
  } finally {
    await conn.close()
  }
}
