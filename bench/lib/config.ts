/**
 * Sizes of a full run (about 20 minutes on the project's 2-core machine) and of the quick mode
 * (BENCH_QUICK=1, about 3 minutes, for checking the harness). BENCH_SECTIONS=matrix,scale,sale picks
 * sections; BENCH_ONLY=redis,zk,... picks contenders of the matrix; BENCH_CONCURRENCY=1,50 and
 * BENCH_WAITERS=10,100,1000 pick its scenarios (`-` for none); BENCH_WORKERS the processes (default 4). Narrowed runs are for development only.
 */
import type { SaleConfig } from '../sections/flash-sale.js'
import type { MatrixConfig } from '../sections/matrix.js'
import type { ScaleConfig } from '../sections/scale.js'

/** Everything a run is told. */
export interface RunConfig {
  readonly quick: boolean
  readonly sections: ReadonlySet<string>
  readonly only: ReadonlySet<string> | undefined
  readonly workers: number
  readonly matrix: MatrixConfig
  readonly scale: ScaleConfig
  readonly sale: Omit<SaleConfig, 'redisUrl'>
  /** redis-benchmark requests at -c 50 (a fifth at -c 1) and repetitions. */
  readonly redisBenchmark: { requests: number; runs: number }
}

/** The least time contended waiters run before the measured window (BENCH_QUICK aside). */
export const CONTENDED_RAMP_MS = 2_500

const list = (v: string | undefined) =>
  v === undefined || v === '' ? undefined : new Set(v.split(',').map((x) => x.trim()))

/** The configuration from the environment. */
export function runConfig(env: NodeJS.ProcessEnv = process.env): RunConfig {
  const quick = env.BENCH_QUICK === '1'
  const waiters = list(env.BENCH_WAITERS)
  const concurrency = list(env.BENCH_CONCURRENCY)
  return {
    quick,
    sections: list(env.BENCH_SECTIONS) ?? new Set(['matrix', 'scale', 'sale']),
    only: list(env.BENCH_ONLY),
    // BENCH_WORKERS=1 puts every waiter of a contended cell in one process (development only).
    workers: Number(env.BENCH_WORKERS ?? 4),
    matrix: {
      runs: quick ? 1 : 3,
      uncontendedMs: quick ? 300 : 1_200,
      contendedMs: quick ? 600 : 2_500,
      // A cell's first seconds run slower for a library than for a floor of a few lines (its wake-up path still being
      // compiled and warmed): with 800 ms, latchkey's Redis gap at 10 waiters over 4 processes was 1.03-1.04x
      // proto-blpop's (redis-handoff.ts, 5 rounds each, alternating), with 3,000 ms 0.88-0.92x. See CONTENDED_RAMP_MS.
      rampMs: quick ? 300 : CONTENDED_RAMP_MS,
      rampPerWaiterMs: quick ? 1 : 2,
      warmUpMs: quick ? 0 : 500,
      concurrency: concurrency === undefined ? [1, 50] : [...concurrency].filter((x) => x !== '-').map(Number),
      waiters: waiters === undefined ? [10, 100, 1_000] : [...waiters].filter((x) => x !== '-').map(Number),
      holdMs: 1,
      thinkMs: 5,
    },
    scale: quick
      ? {
          cycles: 100_000,
          redisCycles: 20_000,
          held: 10_000,
          holdMs: 2_000,
          heldTtlMs: 3_000,
          waiters: 1_000,
          settleMs: 1_500,
        }
      : {
          cycles: 1_000_000,
          redisCycles: 1_000_000,
          held: 100_000,
          holdMs: 10_000,
          heldTtlMs: 30_000,
          waiters: 10_000,
          settleMs: 4_000,
        },
    sale: quick
      ? { runs: 1, buyers: 400, stock: 150, processes: 2, concurrency: 32, backends: 3 }
      : { runs: 3, buyers: 1_000, stock: 300, processes: 2, concurrency: 64, backends: 7 },
    redisBenchmark: { requests: quick ? 20_000 : 100_000, runs: quick ? 1 : 3 },
  }
}
