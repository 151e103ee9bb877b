/**
 * The bench harness's own client CPU per acquisition in a contended cell: `contended()` of lib/modes.ts (hold 1 ms,
 * think 5 ms, two timers and a promise chain per acquisition) driving a lock that costs nothing (an in-process
 * queue), with `waiters` waiters in `procs` processes, each process its own lock. What a contender's "client CPU per
 * 1k acq" includes before the lock does anything; subtract it to see the lock's own share.
 *
 *   npx tsx bench/harness-cpu.ts [waiters=10] [procs=4] [seconds=5]
 */
import { fork } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import type { Contender } from './lib/contender.js'
import { contended } from './lib/modes.js'
import { hostNow } from './lib/stats.js'

/** A mutex that costs nothing: the next waiter in this process gets it at release. */
function freeLock(): Contender {
  let held = false
  const queue: Array<() => void> = []
  const release = async (): Promise<void> => {
    const next = queue.shift()
    if (next === undefined) held = false
    else next()
  }
  return {
    async acquire() {
      if (held) await new Promise<void>((resolve) => queue.push(resolve))
      held = true
      return { release }
    },
    async close() {},
  }
}

async function child(): Promise<void> {
  const [, , , waiters, startAt, seconds] = process.argv
  const measureFrom = Number(startAt) + 1_500
  const r = await contended(freeLock(), Number(waiters), 0, 'k', {
    startAt: Number(startAt),
    measureFrom,
    endAt: measureFrom + Number(seconds) * 1_000,
    holdMs: 1,
    thinkMs: 5,
  })
  process.send?.({ acq: r.intervals.length / 3, cpuMs: r.cpuMs })
  process.exit(0)
}

async function parent(): Promise<void> {
  const [waiters = '10', procs = '4', seconds = '5'] = process.argv.slice(2)
  const p = Number(procs)
  // hostNow() is the host's monotonic clock, the same in every process (lib/stats.ts).
  const startAt = hostNow() + 1_000
  const parts = await Promise.all(
    Array.from({ length: p }, (_, i) => {
      const n = Math.floor(Number(waiters) / p) + (i < Number(waiters) % p ? 1 : 0)
      const c = fork(fileURLToPath(import.meta.url), ['child', String(n), String(startAt), seconds], {
        execArgv: ['--import', 'tsx'],
      })
      return new Promise<{ acq: number; cpuMs: number }>((ok) => c.once('message', (m) => ok(m as never)))
    }),
  )
  const acq = parts.reduce((s, r) => s + r.acq, 0)
  const cpu = parts.reduce((s, r) => s + r.cpuMs, 0)
  console.log(
    `harness alone, ${waiters} waiters x ${p} procs, ${seconds}s: ${acq} acq (${(acq / Number(seconds)).toFixed(0)}/s), client CPU ${((cpu / acq) * 1000).toFixed(1)} µs/acq`,
  )
}

if (process.argv[2] === 'child') await child()
else await parent()
