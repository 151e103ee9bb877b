/**
 * A buyer process of the load generator (forked by run-load.ts): receives a {@link BuyerJob}, sends
 * its buyers' orders over keep-alive connections (undici pools, round-robin over the services), and
 * reports counts, latencies and order ids.
 */
import { setTimeout as sleep } from 'node:timers/promises'
import { Pool } from 'undici'
import { type BuyerCounts, type BuyerJob, type BuyerReady, type BuyerReport, zeroCounts } from './types.js'

/** How long one order keeps being retried (dead services, 503s, a whole service restarting). */
const RETRY_BUDGET_MS = 30_000

/** `recovered`: ALREADY_ORDERED after a connection died mid-request, i.e. that request's order was committed. */
type Answer = 'created' | 'recovered' | 'sold-out' | 'already' | 'failed' | 'declined' | 'pending'

/** One HTTP attempt: an answer, or a connection failure (`refused` when nothing reached the service). */
type Attempt = { status: number; body: { orderId?: string; code?: string } } | { failure: 'refused' | 'lost' }

/** Sends orders to the services, skipping for a second any service that refused a connection. */
class Orders {
  readonly counts: BuyerCounts = zeroCounts()
  readonly latencies: number[] = []
  readonly orderIds: string[] = []
  readonly declinedIds: string[] = []
  readonly samples: string[] = []
  lastOrderAt = 0
  private readonly pools: Pool[]
  private readonly downUntil: number[]

  constructor(private readonly job: BuyerJob) {
    const perPool = Math.max(1, Math.ceil(job.concurrency / job.urls.length))
    this.pools = job.urls.map((url) => new Pool(url, { connections: perPool, keepAliveTimeout: 30_000 }))
    this.downUntil = job.urls.map(() => 0)
  }

  /** Orders for user `u<buyer>`, starting at service `first`, retrying elsewhere on failures and 503s. */
  async place(buyer: number, first: number): Promise<Answer> {
    let maybeCommitted = false
    const giveUpAt = performance.now() + RETRY_BUDGET_MS
    for (let attempt = 0; performance.now() < giveUpAt; attempt++) {
      const index = this.pick(first + attempt)
      const result = await this.send(index, buyer)
      if ('failure' in result) {
        this.counts.networkErrors++
        if (result.failure === 'refused') this.downUntil[index] = performance.now() + 1_000
        // A connection lost mid-request may have committed the order: a retry will tell (ALREADY_ORDERED).
        else maybeCommitted = true
        // Every service down (a restart): wait for them rather than burn the budget.
        if (result.failure === 'lost' || this.allDown()) await sleep(20 + Math.random() * 80)
        continue
      }
      const { status, body } = result
      if (status === 201 && typeof body.orderId === 'string') {
        this.orderIds.push(body.orderId)
        this.lastOrderAt = Date.now()
        return 'created'
      }
      // Paid sales: the payment was refused (the stock given back), or not settled yet when answered.
      if (status === 402 && body.code === 'PAYMENT_DECLINED' && typeof body.orderId === 'string') {
        this.declinedIds.push(body.orderId)
        return 'declined'
      }
      if (status === 202 && typeof body.orderId === 'string') return 'pending'
      if (status === 409 && body.code === 'SOLD_OUT') return 'sold-out'
      if (status === 409 && body.code === 'ALREADY_ORDERED') return maybeCommitted ? 'recovered' : 'already'
      if (status !== 503) {
        this.sample(`${status} ${JSON.stringify(body)}`)
        return 'failed'
      }
      this.counts.busy++
      await sleep(10 + Math.random() * 40)
    }
    return 'failed'
  }

  sample(text: string): void {
    if (this.samples.length < 5) this.samples.push(text)
  }

  async close(): Promise<void> {
    await Promise.all(this.pools.map((pool) => pool.close()))
  }

  private allDown(): boolean {
    const now = performance.now()
    return this.downUntil.every((until) => until > now)
  }

  private pick(from: number): number {
    const now = performance.now()
    for (let k = 0; k < this.pools.length; k++) {
      const i = (from + k) % this.pools.length
      if ((this.downUntil[i] ?? 0) <= now) return i
    }
    return from % this.pools.length
  }

  private async send(index: number, buyer: number): Promise<Attempt> {
    const started = performance.now()
    this.counts.requests++
    try {
      const res = await (this.pools[index] as Pool).request({
        path: this.job.path,
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ userId: `u${buyer}`, quantity: this.job.quantity }),
      })
      const body = (await res.body.json()) as { orderId?: string; code?: string }
      this.latencies.push(performance.now() - started)
      return { status: res.statusCode, body }
    } catch (error) {
      return { failure: (error as { code?: unknown }).code === 'ECONNREFUSED' ? 'refused' : 'lost' }
    }
  }
}

/** One buyer: an order, and sometimes the same order again through another service. */
async function buyer(orders: Orders, i: number, duplicateRate: number): Promise<void> {
  const { counts } = orders
  const answer = await orders.place(i, i)
  const hasOrder = answer === 'created' || answer === 'recovered' || answer === 'declined' || answer === 'pending'
  if (answer === 'created') counts.ordered++
  else if (answer === 'recovered') counts.recovered++
  else if (answer === 'sold-out') counts.soldOut++
  else if (answer === 'declined') counts.declined++
  else if (answer === 'pending') counts.pending++
  else {
    if (answer === 'already') orders.sample(`u${i}: first order refused as a duplicate`)
    counts.failed++
  }
  if (Math.random() >= duplicateRate) return
  // Must never become a second order: refused as ALREADY_ORDERED (or SOLD_OUT for a buyer without one).
  const again = await orders.place(i, i + 1)
  if ((again === 'created' || again === 'declined' || again === 'pending') && hasOrder) counts.doubled++
  else if (again === 'created') counts.ordered++
  else if (again === 'declined') counts.declined++
  else if (again === 'pending') counts.pending++
  else if (again === 'already' || again === 'recovered' || (again === 'sold-out' && hasOrder)) counts.duplicates++
  else if (again === 'failed') counts.failed++
}

async function run(job: BuyerJob): Promise<BuyerReport> {
  const orders = new Orders(job)
  let next = job.from
  let done = 0
  const report = (): void => void process.send?.({ type: 'progress', done })
  const progress = setInterval(report, 200)
  const lane = async (): Promise<void> => {
    while (next < job.to) {
      await buyer(orders, next++, job.duplicateRate)
      done++
      // Also every 10 buyers: a fast sale can sell out between two ticks, and a fault injected "after N
      // buyers" must land while stock is left.
      if (done % 10 === 0) report()
    }
  }
  await Promise.all(Array.from({ length: job.concurrency }, lane))
  clearInterval(progress)
  await orders.close()
  const { counts, orderIds, declinedIds, samples, lastOrderAt } = orders
  const latencies = Float64Array.from(orders.latencies)
  return { type: 'result', counts, latencies, orderIds, declinedIds, samples, lastOrderAt }
}

let finished = false
// The load generator gone (Ctrl-C, a crash) means nobody wants the rest of the orders.
process.on('disconnect', () => process.exit(finished ? 0 : 1))
process.once('message', (message) => {
  run(message as BuyerJob).then(
    (report) => {
      finished = true
      process.send?.(report, () => process.disconnect())
    },
    (error: unknown) => {
      console.error('buyer worker failed:', error)
      process.exit(1)
    },
  )
})
const ready: BuyerReady = { type: 'ready' }
process.send?.(ready)
