/**
 * The workloads of the latchkey-tx benchmark: a two-branch saga and a two-branch TCC whose branches are
 * participant calls (0 or 2 business writes, with or without the barrier), the no-coordinator baseline doing
 * the same participant calls in a row, and a closed-loop driver that runs one of them for a fixed time.
 */
import type { Coordinator, RunResult } from 'latchkey-tx'
import { ascending, percentile } from './stats.js'
import type { Participant } from './tx-participant.js'

/** One global transaction (or one baseline unit of work). */
export type Op = () => Promise<void>

/** A coordinator variant of a cell. */
export interface Variant {
  readonly writes: 0 | 2
  readonly barrier: boolean
}

export const VARIANTS: readonly Variant[] = [
  { writes: 0, barrier: false },
  { writes: 0, barrier: true },
  { writes: 2, barrier: false },
  { writes: 2, barrier: true },
]

export type Protocol = 'saga' | 'tcc'

const ok = (r: RunResult) => {
  if (r.status !== 'succeeded') throw new Error(`global transaction ${r.gid} ended ${r.status}: ${String(r.error)}`)
}

/** Registers the saga and TCC of `v` on `tc` and returns one global transaction of each. */
export function defineOps(tc: Coordinator, p: Participant, v: Variant): Record<Protocol, Op> {
  const name = `bench-${v.writes}${v.barrier ? '-barrier' : ''}`
  const call = (ctx: { gid: string; branch: string; op: string }) =>
    p.branch(v.writes, v.barrier ? { gid: ctx.gid, branch: ctx.branch, op: ctx.op } : undefined)
  const saga = tc
    .saga(name)
    .step('out', { action: call, compensate: call })
    .step('in', { action: call, compensate: call })
  const tcc = tc.tcc(name, {
    out: { try: call, confirm: call, cancel: call },
    in: { try: call, confirm: call, cancel: call },
  })
  return {
    saga: async () => ok(await saga.run({ amount: 1 })),
    tcc: async () => ok(await tcc.run({ amount: 1 })),
  }
}

/** The same participant calls with no coordinator: two for a saga, four (try and confirm of each) for a TCC. */
export function baselineOps(p: Participant): Record<Protocol, Op> {
  return {
    saga: async () => {
      await p.branch(2, undefined)
      await p.branch(2, undefined)
    },
    tcc: async () => {
      for (let i = 0; i < 4; i++) await p.branch(2, undefined)
    },
  }
}

/** What runs of one op added up to. */
export class Tally {
  done = 0
  errors = 0
  elapsedMs = 0
  firstError: unknown
  readonly latencies: number[] = []

  get tps(): number {
    return this.elapsedMs > 0 ? (this.done * 1000) / this.elapsedMs : Number.NaN
  }

  /** p50 and p99 latency in ms. */
  quantiles(): { p50: number; p99: number } {
    const sorted = ascending(this.latencies)
    return { p50: percentile(sorted, 50), p99: percentile(sorted, 99) }
  }
}

/** Runs `op` from `concurrency` closed-loop workers for `ms`; adds to `tally` unless it is undefined (warm-up). */
export async function drive(op: Op, concurrency: number, ms: number, tally: Tally | undefined): Promise<void> {
  const started = performance.now()
  const end = started + ms
  const worker = async () => {
    while (performance.now() < end) {
      const t0 = performance.now()
      try {
        await op()
        if (tally !== undefined) {
          tally.latencies.push(performance.now() - t0)
          tally.done++
        }
      } catch (error) {
        if (tally !== undefined) {
          tally.errors++
          tally.firstError ??= error
        }
      }
    }
  }
  await Promise.all(Array.from({ length: concurrency }, worker))
  if (tally !== undefined) tally.elapsedMs += performance.now() - started
}
