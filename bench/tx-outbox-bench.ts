/**
 * latchkey-tx outbox throughput: messages/s that a relay moves from an outbox table (PostgreSQL, MariaDB, SQLite)
 * to RabbitMQ with publisher confirms and `mandatory`, beside a bare confirmed publish loop written with amqplib
 * on the same broker, exchange and queue, in the same run (rounds alternate bare and relay cells). Every message
 * is persistent, carries the same payload size and the same properties (messageId, a key header, mandatory).
 *
 * Confirm batching policy, the same on both sides: a window of `--batch` messages is published, then the loop
 * waits for every confirm of that window before the next one. The relay works that way per partition (one wave =
 * the oldest unsent row of each key in a read of `--batch` rows), so the bare loop is shown with one window in
 * flight and with as many windows in flight as the relay has partitions.
 *
 * The relay cell: `--messages` rows are committed first (not timed), then a relay starts and the clock runs until
 * its `published` events account for every row (lease taking and table checks included). Latency: rows added
 * one per transaction at a steady rate while a relay runs; add-commit → consumer receipt, p50/p99.
 *
 *   npm run build && npx tsx bench/tx-outbox-bench.ts [--messages=3000] [--size=256] [--keys=500] [--batch=100]
 *     [--partitions=8] [--rounds=2] [--db=postgres,mysql,sqlite] [--latency=200]
 *     [--baseline=/path/to/another/build/outbox/index.js]
 *
 * `--baseline` adds relay cells of another build of `latchkey-tx/outbox` (e.g. the main checkout's dist), so a
 * change to the relay is measured against the code before it in the same run.
 *
 * Printed, never asserted. Needs RabbitMQ on LATCHKEY_RABBITMQ_URL (default amqp://guest:guest@127.0.0.1:5672).
 */
import { randomBytes } from 'node:crypto'
import { cpus, loadavg } from 'node:os'
import { setTimeout as delay } from 'node:timers/promises'
import amqp from 'amqplib'
import type { Outbox } from 'latchkey-tx/outbox'
import * as current from 'latchkey-tx/outbox'
import { confirmedPublishRate } from './lib/amqp-confirm-loop.js'
import { type Dialect, openOutboxDb } from './lib/outbox-business-db.js'
import { ascending, fmt, percentile } from './lib/stats.js'

const RABBIT_URL = process.env.LATCHKEY_RABBITMQ_URL ?? 'amqp://guest:guest@127.0.0.1:5672'
const MYSQL_URL = process.env.LATCHKEY_MYSQL_URL ?? 'mysql://root@127.0.0.1:3306/test'
const PG_URL = process.env.LATCHKEY_POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/test'
const args = process.argv.slice(2)
const flag = (name: string) => args.find((a) => a.startsWith(`--${name}=`))?.split('=')[1]
const MESSAGES = Number(flag('messages') ?? 3000)
const SIZE = Number(flag('size') ?? 256)
const KEYS = Number(flag('keys') ?? 500)
const BATCH = Number(flag('batch') ?? 100)
const PARTITIONS = Number(flag('partitions') ?? 8)
const ROUNDS = Number(flag('rounds') ?? 2)
const LATENCY_N = Number(flag('latency') ?? 200)
const DBS = (flag('db') ?? 'postgres,mysql,sqlite').split(',') as Dialect[]
const BASELINE = flag('baseline')
type OutboxModule = Pick<typeof current, 'createOutbox' | 'rabbitPublisher'>
const baseline: OutboxModule | undefined = BASELINE === undefined ? undefined : await import(BASELINE)
const load = () =>
  loadavg()
    .map((l) => l.toFixed(2))
    .join(' ')
console.log(
  `# latchkey-tx outbox benchmark: ${MESSAGES} messages of ${SIZE} B over ${KEYS} keys, windows of ${BATCH}, ${PARTITIONS} partitions, ${ROUNDS} rounds`,
)
console.log(`node ${process.version}, ${cpus().length} CPUs, load average at start: ${load()}\n`)

const tag = randomBytes(4).toString('hex')
const exchange = `bench-outbox-${tag}`
const queue = `bench-outbox-${tag}`
const filler = 'x'.repeat(Math.max(0, SIZE - 40))
const payloadOf = (i: number) => ({ i, t: Date.now(), f: filler })

// The consumer drains the queue (no-ack) so it never grows; in the latency phase it records receipt times.
const consumerConn = await amqp.connect(RABBIT_URL)
const consumerCh = await consumerConn.createChannel()
await consumerCh.assertExchange(exchange, 'topic', { durable: false })
await consumerCh.assertQueue(queue, { durable: false })
await consumerCh.bindQueue(queue, exchange, '#')
let onReceipt: ((t: number) => void) | undefined
await consumerCh.consume(
  queue,
  (m) => {
    if (m === null || onReceipt === undefined) return
    onReceipt(Date.now() - (JSON.parse(m.content.toString()) as { t: number }).t)
  },
  { noAck: true },
)

/** The bare loop: `windows` windows of BATCH messages in flight, each awaited as a whole before its next. */
const bare = (windows: number) =>
  confirmedPublishRate({
    url: RABBIT_URL,
    exchange,
    routingKey: 'bench.bare',
    messages: MESSAGES,
    batch: BATCH,
    windows,
    message: (i) => ({ id: `bare-${tag}-${i}`, key: `k${i % KEYS}`, payload: payloadOf(i) }),
  })

/** A fresh business database of `dialect` with outbox tables of their own (dropped by its close). */
const openDb = (dialect: Dialect) =>
  openOutboxDb(
    dialect,
    `bench_ob_${tag}_${randomBytes(2).toString('hex')}_`,
    { postgres: PG_URL, mysql: MYSQL_URL },
    (j) => ({ topic: 'bench.outbox', key: `k${j % KEYS}`, payload: payloadOf(j) }),
  )

/** Time from relay start to its first published wave, per dialect, last round (leases, table checks). */
const startMs = new Map<Dialect, number>()
/** Per dialect and round: messages/s from the first published wave to the last (the relay's start left out). */
const steady = new Map<Dialect, number[]>()

/** Relay cell: MESSAGES rows committed first, then one relay; messages/s until every row is published. */
async function relayRun(dialect: Dialect, lib: OutboxModule = current): Promise<number> {
  const { createOutbox } = lib
  const target = openDb(dialect)
  const outbox = createOutbox({ store: target.store, partitions: PARTITIONS })
  try {
    await outbox.ready()
    await target.addMany(outbox, 0, MESSAGES, BATCH)
    const { ms, firstWaveMs, firstWave } = await drain(outbox, lib)
    if (lib === current) {
      startMs.set(dialect, firstWaveMs)
      const rate = (MESSAGES - firstWave) / ((ms - firstWaveMs) / 1000)
      steady.set(dialect, [...(steady.get(dialect) ?? []), rate])
    }
    return MESSAGES / (ms / 1000)
  } finally {
    await outbox.close()
    await target.close()
  }
}

/**
 * Starts a relay over the MESSAGES rows committed and times it until its `published` events account for every
 * row: the whole time, the time to its first wave, and that wave's size.
 */
async function drain(
  outbox: Outbox,
  lib: OutboxModule,
): Promise<{ ms: number; firstWaveMs: number; firstWave: number }> {
  let published = 0
  let firstWave = 0
  let firstWaveMs = 0
  let done!: () => void
  const finished = new Promise<void>((resolve) => {
    done = resolve
  })
  const started = performance.now()
  const relay = outbox.relay({
    publisher: lib.rabbitPublisher({ url: RABBIT_URL, exchange }),
    batchSize: BATCH,
    pollMs: 20,
    onEvent: (e) => {
      if (e.type === 'published') {
        if (published === 0) {
          firstWaveMs = performance.now() - started
          firstWave = e.ids.length
        }
        published += e.ids.length
        if (published >= MESSAGES) done()
      } else if (e.type === 'error' || e.type === 'failed') console.error('  relay:', e.type, e.error.message)
    },
  })
  await finished
  const ms = performance.now() - started
  await relay.close()
  return { ms, firstWaveMs, firstWave }
}

/** Latency: LATENCY_N rows added one per transaction at ~100/s while a relay (pollMs 20) runs. */
async function latency(dialect: Dialect): Promise<{ p50: number; p99: number; n: number }> {
  const { createOutbox, rabbitPublisher } = current
  const target = openDb(dialect)
  const outbox = createOutbox({ store: target.store, partitions: PARTITIONS })
  const seen: number[] = []
  try {
    await outbox.ready()
    const relay = outbox.relay({
      publisher: rabbitPublisher({ url: RABBIT_URL, exchange }),
      batchSize: BATCH,
      pollMs: 20,
    })
    onReceipt = (ms) => seen.push(ms)
    for (let i = 0; i < LATENCY_N; i++) {
      await target.addMany(outbox, i, 1, 1)
      await delay(10)
    }
    const deadline = Date.now() + 30_000
    while (seen.length < LATENCY_N && Date.now() < deadline) await delay(20)
    onReceipt = undefined
    await relay.close()
    const sorted = ascending(seen)
    return { p50: percentile(sorted, 50), p99: percentile(sorted, 99), n: sorted.length }
  } finally {
    onReceipt = undefined
    await outbox.close()
    await target.close()
  }
}

/** A row of the throughput table: a cell run once per round, alternating with the others. */
interface Cell {
  label: string
  run: () => Promise<number>
  rates: number[]
}

/** The bare loops, then the relay on each database (and the baseline build's relay, when given). */
function throughputCells(): Cell[] {
  return [
    { label: `bare amqplib loop, 1 window of ${BATCH} in flight`, run: () => bare(1), rates: [] },
    { label: `bare amqplib loop, ${PARTITIONS} windows of ${BATCH} in flight`, run: () => bare(PARTITIONS), rates: [] },
    ...DBS.map((d) => ({ label: `outbox relay, ${d} table`, run: () => relayRun(d), rates: [] as number[] })),
    ...(baseline === undefined
      ? []
      : DBS.map((d) => ({
          label: `outbox relay before this change (--baseline), ${d} table`,
          run: () => relayRun(d, baseline),
          rates: [] as number[],
        }))),
  ]
}

/** The throughput table: best of rounds per cell, against the best bare loop with one window in flight. */
function printThroughput(cells: Cell[]): void {
  const base = Math.max(...(cells[0]?.rates ?? [Number.NaN]))
  console.log('| cell | messages/s (best of rounds) | each round | vs bare, 1 window |')
  console.log('| --- | ---: | --- | ---: |')
  for (const { label, rates } of cells) {
    const best = Math.max(...rates)
    console.log(`| ${label} | ${fmt(best)} | ${rates.map((r) => fmt(r)).join(', ')} | ${(best / base).toFixed(2)} |`)
  }
  for (const d of DBS) {
    const rates = steady.get(d) ?? []
    console.log(
      `| outbox relay, ${d} table, after its first wave | ${fmt(Math.max(...rates))} | ${rates.map((r) => fmt(r)).join(', ')} | ${(Math.max(...rates) / base).toFixed(2)} |`,
    )
  }
  console.log(
    `\nrelay start to its first confirmed wave (leases taken, tables checked), last round: ${DBS.map((d) => `${d} ${fmt(startMs.get(d) ?? Number.NaN)} ms`).join(', ')}`,
  )
}

async function printLatency(): Promise<void> {
  console.log('\n| end-to-end latency (add commit → consumer) | p50 ms | p99 ms | received |')
  console.log('| --- | ---: | ---: | ---: |')
  for (const d of DBS) {
    const l = await latency(d)
    console.log(`| outbox relay, ${d} table, pollMs 20 | ${fmt(l.p50)} | ${fmt(l.p99)} | ${l.n}/${LATENCY_N} |`)
  }
}

try {
  const cells = throughputCells()
  for (let r = 0; r < ROUNDS; r++) {
    for (const cell of cells) cell.rates.push(await cell.run())
  }
  printThroughput(cells)
  if (LATENCY_N > 0) await printLatency()
  console.log(`\nload average at end: ${load()}`)
} finally {
  await consumerCh.deleteQueue(queue).catch(() => undefined)
  await consumerCh.deleteExchange(exchange).catch(() => undefined)
  await consumerConn.close().catch(() => undefined)
}
