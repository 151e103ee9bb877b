import { randomUUID } from 'node:crypto'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { redactUrl } from 'latchkey'
import { type Cluster, startCluster } from './cluster.js'
import { formatChecks, formatTable, type ResultRow } from './load/report.js'
import { runSale } from './load/run-sale.js'
import type { PaymentsUrls } from './payments/payments-checks.js'
import { DEFAULT_RABBIT_URL, type PaymentsStack, startPaymentsStack } from './payments/payments-stack.js'
import { randomAdminToken } from './server/admin-auth.js'
import { openStore } from './store/open-store.js'
import { STRATEGIES, type Strategy } from './store/types.js'
import { deleteReserveKeys } from './strategies/reserve/open-reserve.js'

/** What the table's columns mean. */
export const LEGEND = [
  'sold: orders accepted (201, or a lost 201 confirmed by a retry); dup refused: second orders of buyers who had one;',
  'orders/s: order requests answered per second; p50/p99/max: per request; sold in: start of load to the last sale.',
].join('\n')

/** Options of {@link runDemo}. */
export interface DemoOptions {
  /** Service processes. Default 3. */
  readonly workers?: number
  /** Default 10 000. */
  readonly buyers?: number
  /** Default 100. */
  readonly stock?: number
  /** Buyer processes. Default 2. */
  readonly processes?: number
  /** Requests in flight per buyer process. Default 64. */
  readonly concurrency?: number
  /** Default every strategy (`reserve` only with `redisUrl`). */
  readonly strategies?: readonly Strategy[]
  /** Lock backend URL. Default a SQLite file in a temporary folder. */
  readonly backendUrl?: string
  /** Store URL. Default a SQLite file in a temporary folder. */
  readonly storeUrl?: string
  /** Redis for the `reserve` strategy. Default none: `reserve` is skipped, with a line saying so. */
  readonly redisUrl?: string
  /** Where the report goes. Default stdout. */
  readonly write?: (text: string) => void
  /**
   * Paid orders (`--payments`): each sold order is paid through a saga of latchkey-tx's coordinator (a payment
   * service process with its own database, stock released when declined) and announced through the outbox to a
   * notifier over RabbitMQ. Needs the SQLite store. Default off.
   */
  readonly payments?: DemoPayments
}

/** The `--payments` settings. */
export interface DemoPayments {
  /** The payment service's database. Default a SQLite file in the temporary folder. */
  readonly dbUrl?: string
  /** RabbitMQ. Default `LATCHKEY_RABBITMQ_URL` or amqp://guest:guest@127.0.0.1:5672. */
  readonly rabbitUrl?: string
}

/**
 * The strategies to run and what to say about the ones left out: `reserve` needs Redis. Asked for by name
 * without Redis, it is an error; left out of the default list, it is said, not silently dropped.
 */
function strategiesToRun(options: DemoOptions): { strategies: Strategy[]; skipped?: string } {
  const asked = options.strategies ?? STRATEGIES
  if (options.payments !== undefined && asked.includes('reserve')) {
    if (options.strategies !== undefined) {
      throw new RangeError('the reserve strategy cannot run with --payments (releasing its Redis stock is not built)')
    }
    return {
      strategies: asked.filter((s) => s !== 'reserve'),
      skipped: 'reserve: skipped with --payments (a declined payment would have to give Redis its stock back)',
    }
  }
  if (options.redisUrl !== undefined || !asked.includes('reserve')) return { strategies: [...asked] }
  if (options.strategies !== undefined) {
    throw new RangeError('the reserve strategy needs Redis: pass --redis redis://127.0.0.1:6379')
  }
  return {
    strategies: asked.filter((s) => s !== 'reserve'),
    skipped: 'reserve: skipped, it needs Redis (add --redis redis://127.0.0.1:6379 to run it)',
  }
}

/**
 * The README's first command: starts the service (SQLite store + SQLite locks, several processes), sells
 * `stock` items to `buyers` buyers under each strategy, prints the comparison table and the invariant
 * checks. Resolves true only if every invariant held. With `redisUrl` it also runs `reserve`, under a key
 * prefix of its own that it deletes afterwards.
 *
 * @example
 * process.exitCode = (await runDemo()) ? 0 : 1
 */
export async function runDemo(options: DemoOptions = {}): Promise<boolean> {
  const write = options.write ?? ((text: string) => process.stdout.write(`${text}\n`))
  const { strategies, skipped } = strategiesToRun(options)
  const dir = mkdtempSync(join(tmpdir(), 'flash-sale-demo-'))
  const keyPrefix = `flash-sale-demo-${randomUUID().slice(0, 8)}`
  const cleanup = async (): Promise<void> => {
    rmSync(dir, { recursive: true, force: true })
    if (options.redisUrl !== undefined) await deleteReserveKeys(options.redisUrl, keyPrefix)
  }
  const workers = options.workers ?? 3
  const storeUrl = options.storeUrl ?? `sqlite:${join(dir, 'store.db')}`
  const backendUrl = options.backendUrl ?? `sqlite:${join(dir, 'locks.db')}`
  write(
    `flash-sale demo: ${options.stock ?? 100} items, ${options.buyers ?? 10_000} buyers, ${workers} service processes`,
  )
  write(
    `store ${redactUrl(storeUrl)}, locks ${redactUrl(backendUrl)}${options.redisUrl === undefined ? '' : `, reserve on ${redactUrl(options.redisUrl)}`}\n`,
  )
  if (skipped !== undefined) write(skipped)
  const redis = options.redisUrl === undefined ? {} : { redisUrl: options.redisUrl, reserve: { keyPrefix } }
  // The demo's own service: a fresh token that only this process (and its service workers, over IPC) knows.
  const adminToken = randomAdminToken()
  let stack: PaymentsStack | undefined
  const started = async (): Promise<Cluster> => {
    if (options.payments === undefined) return startCluster({ workers, storeUrl, backendUrl, adminToken, ...redis })
    stack = await startPayments(options, { dir, storeUrl, backendUrl, adminToken }, write)
    const payments = { coordinatorUrl: stack.coordinatorUrl }
    return startCluster({ workers, storeUrl, backendUrl, adminToken, payments, ...redis })
  }
  const cluster = await started().catch(async (error: unknown) => {
    await stack?.close()
    await cleanup()
    throw error
  })
  const stop = async (): Promise<void> => {
    await cluster.close()
    await stack?.close()
  }
  // Ctrl-C or a kill must not leave service processes, the temporary folder or Redis keys behind.
  const interrupted = (): void => {
    void stop()
      .then(cleanup)
      .finally(() => process.exit(130))
  }
  process.once('SIGINT', interrupted)
  process.once('SIGTERM', interrupted)
  try {
    const { payments: _settings, ...rest } = options
    const payments = stack === undefined ? {} : { payments: stack as PaymentsUrls }
    return report(await runSales(cluster.urls, strategies, { ...rest, adminToken, ...payments }), write)
  } finally {
    process.off('SIGINT', interrupted)
    process.off('SIGTERM', interrupted)
    await stop()
    await cleanup()
  }
}

/** A warm-up, then one sale per strategy. */
async function runSales(
  urls: readonly string[],
  strategies: readonly Strategy[],
  options: Omit<DemoOptions, 'payments'> & { adminToken: string; payments?: PaymentsUrls },
) {
  const { adminToken } = options
  const payments = options.payments === undefined ? {} : { payments: options.payments }
  // Unreported warm-up, so the first strategy measured does not also pay for JIT compilation.
  const warmUp = { stock: 10, buyers: 1_000, processes: 1, progress: false, adminToken, ...payments }
  await runSale({ urls, strategy: 'db-atomic', ...warmUp })
  const rows: ResultRow[] = []
  for (const strategy of strategies) {
    rows.push(
      await runSale({
        urls,
        strategy,
        stock: options.stock ?? 100,
        buyers: options.buyers ?? 10_000,
        processes: options.processes ?? 2,
        concurrency: options.concurrency ?? 64,
        adminToken,
        ...payments,
      }),
    )
  }
  return rows
}

/** Prints the table, the legend and the checks; true if every invariant held. */
function report(rows: readonly ResultRow[], write: (text: string) => void): boolean {
  const ok = rows.every((row) => row.checks.every((c) => c.ok))
  write(`\n${formatTable(rows)}\n`)
  write(`${LEGEND}\n`)
  if (rows.some((row) => row.payments !== undefined)) write(`${formatPayments(rows)}\n`)
  write(formatChecks(rows))
  write(`\n${ok ? 'All invariants hold.' : 'INVARIANT VIOLATED.'}`)
  return ok
}

/**
 * Starts the payments stack of the demo: the store's tables first (the coordinator reads orders from them
 * before any seller has started), then the payment service, the notifier and the coordinator.
 */
async function startPayments(
  options: DemoOptions,
  where: { dir: string; storeUrl: string; backendUrl: string; adminToken: string },
  write: (text: string) => void,
): Promise<PaymentsStack> {
  if (!where.storeUrl.startsWith('sqlite:')) {
    throw new RangeError('--payments needs the SQLite store (the default): the order side of the saga is SQLite only')
  }
  await (await openStore(where.storeUrl)).close()
  const rabbitUrl = options.payments?.rabbitUrl ?? DEFAULT_RABBIT_URL
  const dbUrl = options.payments?.dbUrl
  const stack = await startPaymentsStack({
    ...where,
    accounts: options.buyers ?? 10_000,
    rabbitUrl,
    ...(dbUrl === undefined ? {} : { paymentDbUrl: dbUrl }),
  })
  write(
    `payments: payment service ${stack.paymentUrl} (db ${redactUrl(dbUrl ?? 'sqlite:<temp>/payments.db')}, ${options.buyers ?? 10_000} accounts, ~10% cannot pay), coordinator ${stack.coordinatorUrl} (saga order -> pay -> confirm), notifier over RabbitMQ ${redactUrl(rabbitUrl)}\n`,
  )
  return stack
}

/** One line per paid sale: what was paid, released, charged and notified. */
function formatPayments(rows: readonly ResultRow[]): string {
  const lines = rows.flatMap((row) => {
    const p = row.payments
    if (p === undefined) return []
    const { declined, pending } = row.result.counts
    return [
      `${row.label.padEnd(10)} paid ${p.paid}, payment declined ${p.released} (stock released; ${declined} buyers told 402), ${pending} answered 202 pending, charged ${(p.charged / 100).toFixed(2)}, ${p.notifications} notifications`,
    ]
  })
  return [
    'payments (sold above = orders paid, whether the buyer heard 201 or 202 and it settled after):',
    ...lines,
  ].join('\n')
}
