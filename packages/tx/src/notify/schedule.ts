/**
 * A notification's retry schedule: the waits between tries, written as `'250ms'`, `'5s'`, `'30m'`, `'1h'` or
 * milliseconds. Hand-written rather than the `ms` package: four units, strict (a typo is a RangeError at the
 * call, not a silent NaN), and no dependency for ten lines.
 */
const UNIT_MS: Readonly<Record<string, number>> = { ms: 1, s: 1_000, m: 60_000, h: 3_600_000 }
const MAX_MS = 2_147_483_647

/** The default schedule: tries at 0, 1 s, 6 s, 36 s and about 5.6 min, then parked. */
export const DEFAULT_SCHEDULE: readonly string[] = ['1s', '5s', '30s', '5m']

/** One wait in milliseconds; RangeError/TypeError naming `what` for anything else. */
export function parseDuration(what: string, value: unknown): number {
  if (typeof value === 'number') {
    if (!Number.isInteger(value) || value < 0 || value > MAX_MS) {
      throw new RangeError(`latchkey-tx: ${what} must be a whole number of ms from 0 to ${MAX_MS}, received ${value}`)
    }
    return value
  }
  if (typeof value !== 'string') {
    throw new TypeError(`latchkey-tx: ${what} must be a duration like '5s' or a number of ms, received ${typeof value}`)
  }
  const m = /^(\d+(?:\.\d+)?)(ms|s|m|h)$/.exec(value.trim())
  const ms = m === null ? Number.NaN : Math.round(Number(m[1]) * (UNIT_MS[m[2] as string] ?? Number.NaN))
  if (!Number.isFinite(ms) || ms > MAX_MS) {
    throw new RangeError(
      `latchkey-tx: ${what} must be a duration like '250ms', '5s', '30m' or '1h' (at most ~24 days), received ${JSON.stringify(value)}`,
    )
  }
  return ms
}

/** The schedule in milliseconds: 1 to 100 waits. */
export function parseSchedule(value: unknown): number[] {
  if (value === undefined) return DEFAULT_SCHEDULE.map((d, i) => parseDuration(`schedule[${i}]`, d))
  if (!Array.isArray(value) || value.length < 1 || value.length > 100) {
    throw new TypeError(
      `latchkey-tx: notify schedule must be an array of 1 to 100 waits such as ['1s', '5s', '30s', '5m'], received ${JSON.stringify(value)}`,
    )
  }
  return value.map((d, i) => parseDuration(`notify schedule[${i}]`, d))
}
