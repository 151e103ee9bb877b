/**
 * latchkey's Redis backend side by side with its Node peers, in one run, on a private redis-server
 * (started here on a free loopback port, so other users of 6379 neither disturb nor get disturbed).
 *
 *   npx tsx bench/redis-locks.ts    (about 2 minutes; BENCH_ROUNDS=1 BENCH_CONTENDED_MS=2000 for a quick look)
 *
 * Scenarios (issue 3): uncontended lock+unlock pairs/s at concurrency 1 and 50 (one key per worker, one
 * connection per library); contended: W = 10 and 100 waiters on one key, hold 1 ms, think 5 ms after
 * release, reporting the handoff gap (another waiter's acquisition minus the previous holder's release
 * call), client commands per acquisition (every ioredis command, subscriber included), server commands
 * (INFO commandstats, including those inside Lua), fairness (max/min acquisitions per waiter, starved
 * waiters), give-ups and overlapping holders.
 */
import { Redis } from 'ioredis'
import { startRedisServer } from '../packages/latchkey/test/support/redis-server-process.js'
import { type Contender, latchkey, local, raw, redisSemaphore, redlock4, redlock5 } from './redis-peers.js'

/** Uncontended cells: ROUNDS rounds (library order rotated each round), median reported. */
const CELL_MS = Number(process.env.BENCH_CELL_MS ?? 1_500)
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3)
/** Contended cells are longer: fairness needs several acquisitions per waiter. */
const CONTENDED_MS = Number(process.env.BENCH_CONTENDED_MS ?? 4_000)
const HOLD_MS = 1
const THINK_MS = 5

let clientCommands = 0
const proto = Redis.prototype as unknown as { sendCommand(...args: unknown[]): unknown }
const send = proto.sendCommand
proto.sendCommand = function (this: unknown, ...args: unknown[]) {
  clientCommands++
  return send.apply(this, args)
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))
const now = () => performance.now()

function percentile(sorted: readonly number[], p: number): number {
  if (sorted.length === 0) return Number.NaN
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] as number
}

async function serverCalls(admin: Redis): Promise<number> {
  const info = await admin.info('commandstats')
  let total = 0
  for (const m of info.matchAll(/^cmdstat_(\w+):calls=(\d+)/gm)) if (m[1] !== 'info') total += Number(m[2])
  return total
}

interface Measure {
  ops: number
  seconds: number
  client: number
  server: number
  cpuMs: number
}

async function measured(admin: Redis, run: () => Promise<number>): Promise<Measure> {
  const server0 = await serverCalls(admin)
  const client0 = clientCommands
  const cpu0 = process.cpuUsage()
  const t0 = now()
  const ops = await run()
  const seconds = (now() - t0) / 1000
  const cpu = process.cpuUsage(cpu0)
  const client = clientCommands - client0 - 1 // minus our own INFO
  return { ops, seconds, client, server: (await serverCalls(admin)) - server0, cpuMs: (cpu.user + cpu.system) / 1000 }
}

async function uncontended(c: Contender, workers: number, prefix: string, ms = CELL_MS): Promise<number> {
  const end = now() + ms
  let pairs = 0
  await Promise.all(
    Array.from({ length: workers }, async (_, w) => {
      const key = `${prefix}:u${w}`
      while (now() < end) {
        const held = await c.acquire(key)
        if (held === undefined) throw new Error(`${c.name}: uncontended acquire failed`)
        await held.release()
        pairs++
      }
    }),
  )
  return pairs
}

interface Contended {
  acquisitions: number
  gaps: number[]
  perWaiter: number[]
  giveUps: number
  violations: number
}

async function contended(c: Contender, waiters: number, key: string): Promise<Contended> {
  const end = now() + CONTENDED_MS
  const r: Contended = { acquisitions: 0, gaps: [], perWaiter: new Array(waiters).fill(0), giveUps: 0, violations: 0 }
  let holder = -1
  let last: { who: number; releasedAt: number } | undefined
  await Promise.all(
    Array.from({ length: waiters }, async (_, w) => {
      while (now() < end) {
        const held = await c.acquire(key)
        if (held === undefined) {
          r.giveUps++
          continue
        }
        const at = now()
        if (holder !== -1) r.violations++
        holder = w
        if (last !== undefined && last.who !== w) r.gaps.push(at - last.releasedAt)
        r.acquisitions++
        r.perWaiter[w] = (r.perWaiter[w] as number) + 1
        await sleep(HOLD_MS)
        holder = -1
        last = { who: w, releasedAt: now() }
        await held.release()
        await sleep(THINK_MS)
      }
    }),
  )
  return r
}

const fmt = (n: number, digits = 0) =>
  Number.isFinite(n) ? n.toLocaleString('en-US', { maximumFractionDigits: digits, minimumFractionDigits: digits }) : '–'

async function main(): Promise<void> {
  const server = await startRedisServer()
  const admin = new Redis(server.url)
  const url = server.url
  const makers = [raw, latchkey, redlock4, redlock5, redisSemaphore]
  const run = `bench-${Date.now()}`
  try {
    const load = (await import('node:os')).loadavg()[0]?.toFixed(1)
    console.log(
      `# Redis locks, ${new Date().toISOString()}, Node ${process.version}, load average ${load}, uncontended cells ${CELL_MS} ms x ${ROUNDS} rounds, contended cells ${CONTENDED_MS} ms\n`,
    )
    for (const workers of [1, 50]) {
      console.log(`## Uncontended, C=${workers} (one key per worker, one connection per library)\n`)
      console.log(
        '| library | pairs/s (median of rounds) | × raw | client cmds/pair | server cmds/pair | Node CPU ms/1k pairs |',
      )
      console.log('|---|---|---|---|---|---|')
      const rows = new Map<string, Measure[]>()
      for (let round = 0; round < ROUNDS; round++) {
        const order = [...makers.slice(round % makers.length), ...makers.slice(0, round % makers.length)]
        for (const make of order) {
          const c = make(url)
          await uncontended(c, workers, `${run}:warm`, 300) // scripts loaded, channels subscribed, JIT warm
          const m = await measured(admin, () => uncontended(c, workers, `${run}:${c.name}`))
          await c.close()
          rows.set(c.name, [...(rows.get(c.name) ?? []), m])
        }
      }
      const rate = (m: Measure) => m.ops / m.seconds
      const median = (ms: Measure[]) => [...ms].sort((a, b) => rate(a) - rate(b))[Math.floor(ms.length / 2)] as Measure
      const rawRate = rate(median(rows.values().next().value ?? []))
      for (const [name, ms] of rows) {
        const m = median(ms)
        console.log(
          `| ${name} | ${fmt(rate(m))} [${ms.map((x) => fmt(rate(x))).join(', ')}] | ${fmt(rate(m) / rawRate, 2)} | ${fmt(m.client / m.ops, 2)} | ${fmt(m.server / m.ops, 2)} | ${fmt((m.cpuMs / m.ops) * 1000, 1)} |`,
        )
      }
      console.log('')
    }
    for (const waiters of [10, 100]) {
      console.log(`## Contended, W=${waiters} waiters on one key, hold ${HOLD_MS} ms, think ${THINK_MS} ms\n`)
      console.log(
        '| library | acq/s | × local | handoff gap p50 / p99 ms | client cmds/acq | server cmds/acq | fairness max/min | starved | give-ups | overlaps | Node CPU ms/1k |',
      )
      console.log('|---|---|---|---|---|---|---|---|---|---|---|')
      let localRate = Number.NaN
      for (const make of [() => local(), ...makers.slice(1)]) {
        const c = make(url)
        let r: Contended | undefined
        const m = await measured(admin, async () => {
          r = await contended(c, waiters, `${run}:c${waiters}:${c.name}`)
          return r.acquisitions
        })
        await c.close()
        if (r === undefined) continue
        const rate = m.ops / m.seconds
        if (Number.isNaN(localRate)) localRate = rate
        const gaps = [...r.gaps].sort((a, b) => a - b)
        const max = Math.max(...r.perWaiter)
        const min = Math.min(...r.perWaiter)
        const starved = r.perWaiter.filter((n) => n === 0).length
        console.log(
          `| ${c.name} | ${fmt(rate)} | ${fmt(rate / localRate, 2)} | ${fmt(percentile(gaps, 50), 3)} / ${fmt(percentile(gaps, 99), 3)} | ${fmt(m.client / m.ops, 2)} | ${fmt(m.server / m.ops, 2)} | ${min === 0 ? '∞' : fmt(max / min, 2)} | ${starved} | ${r.giveUps} | ${r.violations} | ${fmt((m.cpuMs / m.ops) * 1000, 0)} |`,
        )
      }
      console.log('')
    }
  } finally {
    await admin.quit()
    await server.dispose()
  }
}

await main()
