import { randomUUID } from 'node:crypto'
import { defineCapabilities } from '../backend/backend-base.js'
import type { Backend, BackendCapabilities, LockKind } from '../backend/types.js'
import { lockKey } from '../core/lock-key.js'
import { createLocks, type Locks, type LocksOptions } from '../core/locks.js'
import { eventually } from './eventually.js'
import { refusalLog } from './refusal-log.js'

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
  /** How many distinct acquirers (of any `env.locks()`) the backend has answered "not now" on lock `name`. */
  refusedOwners(name: string): number
  /**
   * Resolves once `count` more acquirers than `before` have been refused on `name`, i.e. are waiting (in line,
   * for a fair or write lock). Orders "the waiter has asked" before what a test does next, without a sleep.
   */
  waitersAsked(name: string, before: number, count?: number): Promise<void>
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
  let log: ReturnType<typeof refusalLog> | undefined
  // Built on first use: the backend is created while the suite is collected, after this env.
  const logged = () => {
    log ??= refusalLog(getBackend())
    return log
  }
  const refusedOwners = (name: string) => logged().refusedOwners(lockKey(namespace, name))
  return {
    options,
    namespace,
    backend: getBackend,
    // Completed with the defaults, like createLocks() reads them, for a backend older than a capability.
    capabilities: () => defineCapabilities(getBackend().capabilities),
    locks(extra = {}) {
      const locks = createLocks({ ...extra, backend: logged().backend, namespace })
      opened.push(locks)
      return locks
    },
    refusedOwners,
    waitersAsked: (name, before, count = 1) =>
      eventually(
        `${count} more waiter(s) asked for ${name}`,
        () => refusedOwners(name) >= before + count,
        scale * 5_000,
      ),
    uniq: (prefix) => `${prefix}-${++n}`,
    ms: (ms) => Math.round(ms * scale),
    async closeAll() {
      const all = opened
      opened = []
      await Promise.all(all.map((l) => l.close()))
    },
    supports: (kind) => defineCapabilities(getBackend().capabilities).kinds.includes(kind),
  }
}

/** Resolves after `ms`: for a duration of the system under test (a TTL, a callback's run time), never to order events. */
export function delay(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms))
}

/**
 * Resolves after pending I/O callbacks have run: inside a critical section, lets every other acquirer's network
 * answer arrive between a read and a write, so two holders at once would show.
 */
export function yieldToIo(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve))
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
