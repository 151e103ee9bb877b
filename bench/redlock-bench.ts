/**
 * RedLock over the five local nodes of scripts/servers/redlock.sh: latchkey's redlockBackend vs node-redlock
 * 5.0.0-beta.2 (bench/node_modules/redlock-v5), each at its defaults on its own five ioredis connections.
 *   uncontended: one caller, acquire + release in a loop on one key, pairs/s
 *   contended:   10 callers in one process loop acquire + release on one key, acquisitions/s (and give-ups:
 *                node-redlock stops after retryCount 10 x ~200 ms; latchkey waits up to waitMs 30 s)
 * Run: scripts/servers/redlock.sh start && npx tsx bench/redlock-bench.ts [seconds per cell, default 3] [rounds, default 3]
 * Each number is the median of the rounds, which alternate the libraries.
 */
import { loadavg } from 'node:os'
import { Redis } from 'ioredis'
import RedlockV5 from 'redlock-v5'
import { redlockBackend } from '../packages/latchkey/src/backends/redlock/index.js'
import { createLocks } from '../packages/latchkey/src/index.js'

const PORTS = [6381, 6382, 6383, 6384, 6385]
const TTL_MS = 10_000
const SECONDS = Number(process.argv[2] ?? 3)

interface Contender {
  readonly name: string
  /** Resolves false when the library gave up waiting. */
  cycle(key: string): Promise<boolean>
  close(): Promise<void>
}

function clients(): Redis[] {
  return PORTS.map((port) => {
    const c = new Redis({ host: '127.0.0.1', port })
    c.on('error', () => undefined)
    return c
  })
}

function latchkey(): Contender {
  const cs = clients()
  const backend = redlockBackend({ clients: cs })
  const locks = createLocks({ backend, namespace: 'bench-redlock' })
  return {
    name: 'latchkey redlockBackend',
    async cycle(key) {
      const lease = await locks.mutex(key).acquire({ ttlMs: TTL_MS, waitMs: 30_000, autoRenew: false })
      await lease.release()
      return true
    },
    async close() {
      await locks.close()
      await backend.close()
      for (const c of cs) c.disconnect()
    },
  }
}

function nodeRedlock(): Contender {
  const cs = clients()
  const redlock = new RedlockV5(cs)
  redlock.on('error', () => undefined)
  return {
    name: 'node-redlock 5.0.0-beta.2',
    async cycle(key) {
      try {
        const lock = await redlock.acquire([`bench-redlock:${key}`], TTL_MS)
        await lock.release()
        return true
      } catch {
        return false
      }
    },
    async close() {
      for (const c of cs) c.disconnect()
    },
  }
}

/** Runs `callers` loops on one key for SECONDS; returns completed cycles/s and give-ups. */
async function run(contender: Contender, callers: number, key: string) {
  const end = performance.now() + SECONDS * 1_000
  let done = 0
  let gaveUp = 0
  const started = performance.now()
  await Promise.all(
    Array.from({ length: callers }, async () => {
      while (performance.now() < end) {
        if (await contender.cycle(key)) done++
        else gaveUp++
      }
    }),
  )
  return { perSecond: done / ((performance.now() - started) / 1_000), gaveUp }
}

const ROUNDS = Number(process.argv[3] ?? 3)
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? 0

async function main(): Promise<void> {
  const contenders = [latchkey(), nodeRedlock()]
  for (const c of contenders) await c.cycle('warmup')
  const cells = contenders.map(() => ({ solo: [] as number[], crowd: [] as number[], gaveUp: 0 }))
  // Rounds alternate the libraries so that load from other processes on the host hits both alike.
  for (let round = 0; round < ROUNDS; round++) {
    for (const [i, contender] of contenders.entries()) {
      const cell = cells[i] as (typeof cells)[0]
      cell.solo.push((await run(contender, 1, `solo-${round}`)).perSecond)
      const crowd = await run(contender, 10, `crowd-${round}`)
      cell.crowd.push(crowd.perSecond)
      cell.gaveUp += crowd.gaveUp
    }
  }
  const rows = contenders.map((c, i) => {
    const cell = cells[i] as (typeof cells)[0]
    return [c.name, median(cell.solo).toFixed(0), median(cell.crowd).toFixed(0), String(cell.gaveUp)]
  })
  for (const c of contenders) await c.close()
  const head = ['library (5 local nodes, TTL 10 s)', 'uncontended pairs/s', 'contended (10) acq/s', 'gave up']
  const table = [head, head.map(() => '---'), ...rows].map((r) => `| ${r.join(' | ')} |`).join('\n')
  console.log(table)
  const load = loadavg()
    .map((l) => l.toFixed(1))
    .join(' ')
  console.log(
    `\nmedian of ${ROUNDS} alternating rounds of ${SECONDS} s per cell; load average ${load}; node ${process.version}`,
  )
}

await main()
