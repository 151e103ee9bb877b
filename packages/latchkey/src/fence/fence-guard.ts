import { checkName } from '../core/validate.js'
import { StaleTokenError } from '../errors.js'

/** Where a fence guard keeps the highest token admitted per name. `admit` must be atomic. */
export interface FenceStore {
  /** Records `token` if it is >= the highest seen for `name`; returns whether it was, and the highest now. */
  admit(name: string, token: bigint): Promise<{ admitted: boolean; highest: bigint }>
}

/** The resource side of fencing (Chubby's CheckSequencer). */
export interface FenceGuard {
  /** Admits `token` for `name` (equal to the highest is fine: the same holder writing again), else throws `StaleTokenError`. */
  admit(name: string, token: bigint): Promise<void>
}

/** A fence store in this process's memory. */
export function memoryFenceStore(): FenceStore {
  const highest = new Map<string, bigint>()
  return {
    async admit(name, token) {
      const seen = highest.get(name) ?? 0n
      if (token < seen) return { admitted: false, highest: seen }
      highest.set(name, token)
      return { admitted: true, highest: token }
    },
  }
}

/**
 * Creates a fence guard over `store` (default: {@link memoryFenceStore}).
 *
 * @example
 * const guard = createFenceGuard()
 * await guard.admit('account:7', lease.token) // throws StaleTokenError for a holder that was overtaken
 */
export function createFenceGuard(store: FenceStore = memoryFenceStore()): FenceGuard {
  return {
    async admit(name, token) {
      checkName('name', name)
      if (typeof token !== 'bigint' || token < 0n) {
        throw new TypeError(`latchkey: token must be a non-negative bigint (lease.token), received ${String(token)}`)
      }
      const result = await store.admit(name, token)
      if (!result.admitted) throw new StaleTokenError(name, token, result.highest)
    },
  }
}
