import { randomUUID } from 'node:crypto'
import type { Backend, BackendCapabilities, LockKind } from '../backend/types.js'
import { createLocks, type Locks, type LocksOptions } from '../core/locks.js'

/** Options of `describeBackendConformance`. */
export interface ConformanceOptions {
  /**
   * How child OS processes build the backend, for the multi-process exclusion test and the exit (leak) check:
   * a module path or file URL whose export (default `createBackend`) returns a `Backend` or a promise of one.
   */
  processBackend?: { module: string; export?: string }
  /**
   * Deletes whatever the run left on the server for lock keys starting with `namespace` (keys, rows, znodes). The
   * suite's namespace holds neither `%` nor `:`, so its keys start with it verbatim (a namespace is escaped in
   * keys); the cases that need other namespaces append to it.
   */
  cleanup?: (namespace: string) => Promise<void>
  /** Multiplies every TTL and delay in the suite, for slow backends. Default 1. */
  timeScale?: number
}

/** What every case group gets. */
export interface SuiteEnv {
  readonly options: ConformanceOptions
  readonly namespace: string
  readonly backend: () => Backend
  readonly capabilities: () => BackendCapabilities
  /** A `Locks` over the backend, closed after each test. */
  locks(options?: Omit<LocksOptions, 'backend'>): Locks
  /** A lock name not used by any other test of the run. */
  uniq(prefix: string): string
  /** `ms * timeScale`. */
  ms(ms: number): number
  /** Closes the `Locks` made by the current test. */
  closeAll(): Promise<void>
  supports(kind: LockKind): boolean
}

export function createEnv(options: ConformanceOptions, getBackend: () => Backend): SuiteEnv {
  const namespace = `lkc-${randomUUID().slice(0, 8)}`
  const scale = options.timeScale ?? 1
  let opened: Locks[] = []
  let n = 0
  return {
    options,
    namespace,
    backend: getBackend,
    capabilities: () => getBackend().capabilities,
    locks(extra = {}) {
      const locks = createLocks({ ...extra, backend: getBackend(), namespace })
      opened.push(locks)
      return locks
    },
    uniq: (prefix) => `${prefix}-${++n}`,
    ms: (ms) => Math.round(ms * scale),
    async closeAll() {
      const all = opened
      opened = []
      await Promise.all(all.map((l) => l.close()))
    },
    supports: (kind) => getBackend().capabilities.kinds.includes(kind),
  }
}

/** Resolves after `ms`. */
export function delay(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms))
}

/** Resolves when `signal` aborts, or rejects after `ms`. */
export function abortedWithin(signal: AbortSignal, ms: number): Promise<unknown> {
  if (signal.aborted) return Promise.resolve(signal.reason)
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`signal not aborted within ${ms} ms`)), ms)
    signal.addEventListener(
      'abort',
      () => {
        clearTimeout(timer)
        resolve(signal.reason)
      },
      { once: true },
    )
  })
}
