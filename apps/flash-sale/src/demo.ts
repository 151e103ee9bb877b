import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { startCluster } from './cluster.js'
import { formatChecks, formatTable, type ResultRow } from './load/report.js'
import { runSale } from './load/run-sale.js'
import { STRATEGIES, type Strategy } from './store/types.js'

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
  /** Default every strategy this build has. */
  readonly strategies?: readonly Strategy[]
  /** Lock backend URL. Default a SQLite file in a temporary folder. */
  readonly backendUrl?: string
  /** Store URL. Default a SQLite file in a temporary folder. */
  readonly storeUrl?: string
  /** Where the report goes. Default stdout. */
  readonly write?: (text: string) => void
}

/**
 * The README's first command: starts the service (SQLite store + SQLite locks, several processes), sells
 * `stock` items to `buyers` buyers under each strategy, prints the comparison table and the invariant
 * checks. Resolves true only if every invariant held.
 *
 * @example
 * process.exitCode = (await runDemo()) ? 0 : 1
 */
export async function runDemo(options: DemoOptions = {}): Promise<boolean> {
  const write = options.write ?? ((text: string) => process.stdout.write(`${text}\n`))
  const dir = mkdtempSync(join(tmpdir(), 'flash-sale-demo-'))
  const workers = options.workers ?? 3
  const buyers = options.buyers ?? 10_000
  const stock = options.stock ?? 100
  const backendUrl = options.backendUrl ?? `sqlite:${join(dir, 'locks.db')}`
  const storeUrl = options.storeUrl ?? `sqlite:${join(dir, 'store.db')}`
  write(`flash-sale demo: ${stock} items, ${buyers} buyers, ${workers} service processes`)
  write(`store ${storeUrl}, locks ${backendUrl}\n`)
  const cluster = await startCluster({ workers, storeUrl, backendUrl }).catch((error: unknown) => {
    rmSync(dir, { recursive: true, force: true })
    throw error
  })
  // Ctrl-C or a kill must not leave service processes or the temporary folder behind.
  const interrupted = (): void => {
    void cluster.close().finally(() => {
      rmSync(dir, { recursive: true, force: true })
      process.exit(130)
    })
  }
  process.once('SIGINT', interrupted)
  process.once('SIGTERM', interrupted)
  const rows: ResultRow[] = []
  try {
    // Unreported warm-up, so the first strategy measured does not also pay for JIT compilation.
    await runSale({
      urls: cluster.urls,
      strategy: 'db-atomic',
      stock: 10,
      buyers: 1_000,
      processes: 1,
      progress: false,
    })
    for (const strategy of options.strategies ?? STRATEGIES) {
      rows.push(
        await runSale({
          urls: cluster.urls,
          strategy,
          stock,
          buyers,
          processes: options.processes ?? 2,
          concurrency: options.concurrency ?? 64,
        }),
      )
    }
  } finally {
    process.off('SIGINT', interrupted)
    process.off('SIGTERM', interrupted)
    await cluster.close()
    rmSync(dir, { recursive: true, force: true })
  }
  const ok = rows.every((row) => row.checks.every((c) => c.ok))
  write(`\n${formatTable(rows)}\n`)
  write(LEGEND)
  write('(reserve, a Redis Lua reserve with an outbox, is not part of this app yet.)\n')
  write(formatChecks(rows))
  write(`\n${ok ? 'All invariants hold.' : 'INVARIANT VIOLATED.'}`)
  return ok
}
