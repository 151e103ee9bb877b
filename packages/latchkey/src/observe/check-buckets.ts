/**
 * Default histogram boundaries for lock wait and hold times, in seconds: from 1 ms (an uncontended lock on a
 * nearby server) to a minute (a long critical section or a long queue).
 */
export const DEFAULT_BUCKETS_SECONDS: readonly number[] = Object.freeze([
  0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60,
])

/** Histogram boundaries: a non-empty array of finite numbers >= 0 in increasing order, copied and frozen. */
export function checkBuckets(option: string, value: unknown): readonly number[] {
  if (!Array.isArray(value)) {
    throw new TypeError(`latchkey: ${option} must be an array of seconds, received ${describe(value)}`)
  }
  if (value.length === 0) throw new RangeError(`latchkey: ${option} must not be empty`)
  value.forEach((bound: unknown, i) => {
    if (typeof bound !== 'number' || !Number.isFinite(bound) || bound < 0) {
      throw new RangeError(`latchkey: ${option}[${i}] must be a finite number >= 0, received ${describe(bound)}`)
    }
    const previous = value[i - 1] as number | undefined
    if (previous !== undefined && bound <= previous) {
      throw new RangeError(`latchkey: ${option} must increase, received ${previous} then ${bound} at [${i}]`)
    }
  })
  return Object.freeze([...(value as number[])])
}

function describe(value: unknown): string {
  if (Array.isArray(value)) return 'an array'
  if (value === null) return 'null'
  if (typeof value === 'string') return JSON.stringify(value)
  return typeof value === 'object' ? 'an object' : String(value)
}
