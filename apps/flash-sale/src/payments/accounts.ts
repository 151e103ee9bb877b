/**
 * The payment service's seeded accounts: buyer `u<i>` of the load generator owns account `u<i>`. Most can pay
 * for a few units; a seeded share cannot pay for one, so their orders are declined and their stock released.
 */

/** Price of one unit, in cents. Default of the payments stack. */
export const UNIT_PRICE = 2_500

/** Balances of the seeded accounts. */
export interface SeedOptions {
  /** Accounts `u0` .. `u<accounts-1>`. */
  readonly accounts: number
  /** Which buyers are poor: the same seed gives the same buyers. Default 1. */
  readonly seed?: number
  /** Percentage (0..100) of accounts that cannot pay for one unit. Default 10. */
  readonly poorPercent?: number
  /** Price of one unit. Default {@link UNIT_PRICE}. */
  readonly unitPrice?: number
}

/** A 32-bit integer hash (Murmur3's finaliser): spreads consecutive user numbers evenly. */
function mix(n: number): number {
  let h = n | 0
  h = Math.imul(h ^ (h >>> 16), 0x85ebca6b)
  h = Math.imul(h ^ (h >>> 13), 0xc2b2ae35)
  return (h ^ (h >>> 16)) >>> 0
}

/**
 * The seeded balance of account `u<index>`: one cent short of a unit for the poor share, five units otherwise
 * (enough for every sale of a demo run but not for unlimited ones).
 *
 * @example
 * seededBalance(7, { accounts: 100 }) // 12_500 or 2_499
 */
export function seededBalance(index: number, options: SeedOptions): number {
  const price = options.unitPrice ?? UNIT_PRICE
  const poor = mix(index * 2_654_435_761 + (options.seed ?? 1)) % 100 < (options.poorPercent ?? 10)
  return poor ? price - 1 : price * 5
}

/** Checks seed options before any I/O. */
export function checkSeedOptions(options: SeedOptions): void {
  if (!Number.isInteger(options.accounts) || options.accounts < 0) {
    throw new RangeError(`payments: accounts must be an integer >= 0, received ${String(options.accounts)}`)
  }
  const poor = options.poorPercent ?? 10
  if (!Number.isFinite(poor) || poor < 0 || poor > 100) {
    throw new RangeError(`payments: poorPercent must be between 0 and 100, received ${String(poor)}`)
  }
  const price = options.unitPrice ?? UNIT_PRICE
  if (!Number.isInteger(price) || price < 1) {
    throw new RangeError(`payments: unitPrice must be an integer >= 1 (cents), received ${String(price)}`)
  }
}
