/** Argument checks that run before any I/O. Each error names the option and the value received. */

/** Longest lock name accepted, in UTF-8 bytes (backends with shorter limits hash longer names). */
export const MAX_NAME_BYTES = 1024

function show(value: unknown): string {
  if (typeof value === 'string') return JSON.stringify(value.length > 40 ? `${value.slice(0, 40)}…` : value)
  if (typeof value === 'bigint') return `${value}n`
  if (typeof value === 'function') return 'a function'
  if (value === null) return 'null'
  if (typeof value === 'object') return Array.isArray(value) ? 'an array' : 'an object'
  return String(value)
}

/**
 * A lock name: a non-empty string of well-formed Unicode, at most {@link MAX_NAME_BYTES} UTF-8 bytes. A lone
 * surrogate has no UTF-8 form: backends that URI-encode keys (ZooKeeper, etcd) would throw `URIError`, the
 * others would store U+FFFD and make it the same lock as a name with a real U+FFFD.
 */
export function checkName(option: string, value: unknown, allowEmpty = false): string {
  if (typeof value !== 'string') throw new TypeError(`latchkey: ${option} must be a string, received ${show(value)}`)
  if (!(value as string & { isWellFormed(): boolean }).isWellFormed()) {
    throw new TypeError(`latchkey: ${option} must be well-formed Unicode (no lone surrogate), received ${show(value)}`)
  }
  if (!allowEmpty && value.length === 0) throw new RangeError(`latchkey: ${option} must not be empty, received ""`)
  const bytes = Buffer.byteLength(value)
  if (bytes > MAX_NAME_BYTES) {
    throw new RangeError(`latchkey: ${option} must be at most ${MAX_NAME_BYTES} bytes, received ${bytes} bytes`)
  }
  return value
}

/** The longest delay a Node timer can wait (about 24.8 days); longer ones would fire at once. */
export const MAX_TIMER_MS = 2_147_483_647

/** A duration in ms: a finite number >= `min` (and <= `max`), or `Infinity` when allowed. */
export function checkDuration(
  option: string,
  value: unknown,
  opts: { min?: number; max?: number; infinite?: boolean } = {},
): number {
  const min = opts.min ?? 0
  if (typeof value !== 'number') {
    throw new TypeError(`latchkey: ${option} must be a number of milliseconds, received ${show(value)}`)
  }
  const ok = (Number.isFinite(value) || (opts.infinite === true && value === Number.POSITIVE_INFINITY)) && value >= min
  if (!ok) {
    const range = `${min === 0 ? 'a non-negative' : `at least ${min} and a`} ${opts.infinite === true ? 'number or Infinity' : 'finite number'}`
    throw new RangeError(`latchkey: ${option} must be ${range}, received ${show(value)}`)
  }
  if (opts.max !== undefined && value > opts.max) {
    throw new RangeError(`latchkey: ${option} must be at most ${opts.max} ms, received ${show(value)}`)
  }
  return value
}

/** `unavailableMs`: at least 1 ms, or `Infinity` to wait through any outage. */
export function checkUnavailableMs(value: unknown): number {
  return checkDuration('unavailableMs', value, { min: 1, infinite: true })
}

/** A whole number >= `min`. */
export function checkInteger(option: string, value: unknown, min: number): number {
  if (typeof value !== 'number') throw new TypeError(`latchkey: ${option} must be an integer, received ${show(value)}`)
  if (!Number.isSafeInteger(value) || value < min) {
    throw new RangeError(`latchkey: ${option} must be an integer >= ${min}, received ${show(value)}`)
  }
  return value
}

export function checkBoolean(option: string, value: unknown): boolean {
  if (typeof value !== 'boolean') throw new TypeError(`latchkey: ${option} must be a boolean, received ${show(value)}`)
  return value
}

export function checkSignal(option: string, value: unknown): AbortSignal {
  if (!(value instanceof AbortSignal)) {
    throw new TypeError(`latchkey: ${option} must be an AbortSignal, received ${show(value)}`)
  }
  return value
}

export function checkFunction<F extends (...args: never[]) => unknown>(option: string, value: unknown): F {
  if (typeof value !== 'function')
    throw new TypeError(`latchkey: ${option} must be a function, received ${show(value)}`)
  return value as F
}

/** An options bag: undefined or a plain object. */
export function checkOptions(option: string, value: unknown): Record<string, unknown> {
  if (value === undefined) return {}
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new TypeError(`latchkey: ${option} must be an object, received ${show(value)}`)
  }
  return value as Record<string, unknown>
}
