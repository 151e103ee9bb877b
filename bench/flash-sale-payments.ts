/**
 * The flash sale with and without `--payments`, same run, same sizes: each strategy sold once on a plain
 * cluster and once on a cluster whose sold orders are paid through latchkey-tx (saga order -> payment service ->
 * confirm + outbox event to a notifier over RabbitMQ), the two interleaved per round so machine noise hits both.
 *
 *   npx tsx bench/flash-sale-payments.ts [--buyers=2000] [--stock=100] [--rounds=2] [--strategy=db-atomic,lock,sharded]
 *
 * Columns: requests/s (every order request answered, sold-out answers included: the buyers' view), orders/s
 * (orders kept per second from the start of the load until the sale is settled: with payments, paid orders, until
 * the last saga finished and its event was consumed), p50/p99 of an order request. Printed, never asserted. Needs RabbitMQ
 * (scripts/servers/rabbitmq.sh start; LATCHKEY_RABBITMQ_URL).
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { loadavg, tmpdir } from 'node:os'
import { join } from 'node:path'
import { type Cluster, startCluster } from '../apps/flash-sale/src/cluster.js'
import { quantile } from '../apps/flash-sale/src/load/run-load.js'
import { runSale } from '../apps/flash-sale/src/load/run-sale.js'
import { type PaymentsStack, startPaymentsStack } from '../apps/flash-sale/src/payments/payments-stack.js'
import { randomAdminToken } from '../apps/flash-sale/src/server/admin-auth.js'
import { openStore } from '../apps/flash-sale/src/store/open-store.js'
import type { Strategy } from '../apps/flash-sale/src/store/types.js'

const args = process.argv.slice(2)
const flag = (name: string) => args.find((a) => a.startsWith(`--${name}=`))?.split('=')[1]
const buyers = Number(flag('buyers') ?? 2_000)
const stock = Number(flag('stock') ?? 100)
const rounds = Number(flag('rounds') ?? 2)
const strategies = (flag('strategy') ?? 'db-atomic,lock,sharded').split(',') as Strategy[]
const adminToken = randomAdminToken()
const load = () =>
  loadavg()
    .map((l) => l.toFixed(2))
    .join(' ')

interface Setup {
  readonly label: string
  readonly cluster: Cluster
  readonly stack?: PaymentsStack
  readonly dir: string
}

async function setUp(paid: boolean): Promise<Setup> {
  const dir = mkdtempSync(join(tmpdir(), `flash-sale-bench-${paid ? 'paid' : 'plain'}-`))
  const storeUrl = `sqlite:${join(dir, 'store.db')}`
  const backendUrl = `sqlite:${join(dir, 'locks.db')}`
  await (await openStore(storeUrl)).close()
  // Every buyer of every round needs an account: buyer i is u<i> in each sale.
  const stack = paid ? await startPaymentsStack({ dir, storeUrl, backendUrl, accounts: buyers, adminToken }) : undefined
  const payments = stack === undefined ? {} : { payments: { coordinatorUrl: stack.coordinatorUrl } }
  const cluster = await startCluster({ workers: 3, storeUrl, backendUrl, adminToken, ...payments })
  return { label: paid ? 'with --payments' : 'without', cluster, dir, ...(stack === undefined ? {} : { stack }) }
}

interface Cell {
  requestsPerSecond: number[]
  ordersPerSecond: number[]
  p50: number[]
  p99: number[]
  allHold: boolean
}

async function sell(setup: Setup, strategy: Strategy, cell: Cell): Promise<void> {
  const started = performance.now()
  const row = await runSale({
    urls: setup.cluster.urls,
    strategy,
    stock,
    buyers,
    progress: false,
    adminToken,
    ...(setup.stack === undefined ? {} : { payments: setup.stack }),
  })
  // Until the sale is settled: with payments, the last saga paid or released and its event consumed.
  const settledMs = performance.now() - started
  const { counts, latencies, elapsedMs } = row.result
  const kept = row.payments?.paid ?? counts.ordered + counts.recovered
  cell.requestsPerSecond.push((latencies.length / elapsedMs) * 1000)
  cell.ordersPerSecond.push((kept / settledMs) * 1000)
  cell.p50.push(quantile(latencies, 0.5))
  cell.p99.push(quantile(latencies, 0.99))
  cell.allHold &&= row.checks.every((c) => c.ok)
}

const median = (values: number[]): number => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] ?? 0

console.log(
  `# flash sale with vs without --payments: ${stock} items, ${buyers} buyers, ${rounds} rounds, load ${load()}`,
)
const setups = [await setUp(false), await setUp(true)]
const cells = new Map<string, Cell>()
try {
  for (const setup of setups) {
    // Unreported warm-up (JIT, connections, the payment path's first calls).
    await runSale({
      urls: setup.cluster.urls,
      strategy: 'db-atomic',
      stock: 10,
      buyers: 500,
      processes: 1,
      progress: false,
      adminToken,
      ...(setup.stack === undefined ? {} : { payments: setup.stack }),
    })
  }
  for (let round = 0; round < rounds; round++) {
    for (const strategy of strategies) {
      for (const setup of round % 2 === 0 ? setups : [...setups].reverse()) {
        const key = `${strategy}|${setup.label}`
        const cell = cells.get(key) ?? { requestsPerSecond: [], ordersPerSecond: [], p50: [], p99: [], allHold: true }
        cells.set(key, cell)
        await sell(setup, strategy, cell)
      }
    }
  }
} finally {
  for (const setup of setups) {
    await setup.cluster.close()
    await setup.stack?.close()
    rmSync(setup.dir, { recursive: true, force: true })
  }
}
console.log('\n| strategy | mode | requests/s | orders/s | p50 ms | p99 ms | invariants |')
console.log('|---|---|---:|---:|---:|---:|---|')
for (const [key, c] of cells) {
  const [strategy, mode] = key.split('|')
  console.log(
    `| ${strategy} | ${mode} | ${median(c.requestsPerSecond).toFixed(0)} | ${median(c.ordersPerSecond).toFixed(1)} | ${median(c.p50).toFixed(1)} | ${median(c.p99).toFixed(1)} | ${c.allHold ? 'all hold' : 'VIOLATED'} |`,
  )
}
console.log(`\nmedians of ${rounds} rounds; load at end ${load()}`)
