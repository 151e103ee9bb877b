/**
 * The numbers side of the harness: percentiles of one cell, and medians with min–max over the runs of a cell.
 */

/** The p-th percentile (0..100) of ascending `sorted`; NaN when empty. */
export function percentile(sorted: ArrayLike<number>, p: number): number {
  if (sorted.length === 0) return Number.NaN
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] as number
}

/** A sorted copy. */
export function ascending(values: Iterable<number>): number[] {
  return [...values].sort((a, b) => a - b)
}

/** Median and range of one figure over the runs of a cell. */
export interface Spread {
  readonly median: number
  readonly min: number
  readonly max: number
  /** Runs with a finite value. */
  readonly n: number
}

/** Median (the lower middle for an even count), min and max of the finite values; NaN fields when none. */
export function spread(values: readonly (number | undefined | null)[]): Spread {
  const finite = ascending(values.filter((v): v is number => typeof v === 'number' && Number.isFinite(v)))
  if (finite.length === 0) {
    // An infinite value (e.g. fairness with a starved waiter) is kept as such rather than dropped.
    const inf = values.some((v) => v === Number.POSITIVE_INFINITY)
    const x = inf ? Number.POSITIVE_INFINITY : Number.NaN
    return { median: x, min: x, max: x, n: 0 }
  }
  const infinite = values.filter((v) => v === Number.POSITIVE_INFINITY).length
  const all = [...finite, ...Array<number>(infinite).fill(Number.POSITIVE_INFINITY)]
  return {
    median: all[Math.floor((all.length - 1) / 2)] as number,
    min: all[0] as number,
    max: all[all.length - 1] as number,
    n: all.length,
  }
}

/** `n` with thousands separators and `digits` decimals; `–` for NaN, `∞` for infinity. */
export function fmt(n: number, digits = 0): string {
  // null: a NaN that went through JSON (IPC, results.jsonl).
  if (n === null || n === undefined || Number.isNaN(n)) return '–'
  if (!Number.isFinite(n)) return '∞'
  return n.toLocaleString('en-US', { maximumFractionDigits: digits, minimumFractionDigits: digits })
}

/** Picks decimals by magnitude: 3 significant digits below 100, none above. */
export function fmtAuto(n: number): string {
  if (!Number.isFinite(n)) return fmt(n)
  const a = Math.abs(n)
  const digits = a >= 100 ? 0 : a >= 10 ? 1 : a >= 1 ? 2 : 3
  return fmt(n, digits)
}

/** `median [min–max]`, or just the median for a single run or when all runs agree. */
export function fmtSpread(s: Spread, format: (n: number) => string = fmtAuto): string {
  if (s.n <= 1 || s.min === s.max) return format(s.median)
  return `${format(s.median)} [${format(s.min)}–${format(s.max)}]`
}

/** Monotonic milliseconds shared by every process on this host (CLOCK_MONOTONIC), µs resolution. */
export function hostNow(): number {
  return Number(process.hrtime.bigint() / 1000n) / 1000
}

/** Resolves after `ms`. */
export const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms))

/** JSON.stringify replacer keeping NaN and ±Infinity (as strings), which JSON would turn into null. */
export function keepNonFinite(_key: string, value: unknown): unknown {
  return typeof value === 'number' && !Number.isFinite(value) ? String(value) : value
}

/** JSON.parse reviver undoing {@link keepNonFinite}. */
export function restoreNonFinite(_key: string, value: unknown): unknown {
  return value === 'NaN' || value === 'Infinity' || value === '-Infinity' ? Number(value) : value
}
