import { afterAll, afterEach, describe } from 'vitest'
import type { Backend } from '../backend/types.js'
import { inputCases } from './cases-input.js'
import { kindCases } from './cases-kinds.js'
import { leaderCases } from './cases-leader.js'
import { modelCases } from './cases-model.js'
import { multiCases } from './cases-multi.js'
import { mutexCases } from './cases-mutex.js'
import { operatorCases } from './cases-operator.js'
import { processCases } from './cases-process.js'
import { semaphoreCases } from './cases-semaphore.js'
import { type ConformanceOptions, createEnv } from './env.js'

/**
 * Registers the backend conformance suite (vitest) for one backend: mutual exclusion in one process and across
 * OS processes, tryAcquire, timeouts, abort, ownership, expiry, watchdog, lost-lease signal, fencing, reentrancy,
 * fair order, read-write, semaphore, multi, lock-delay, leader election, bad input, close() and leaked handles. Cases needing a
 * capability the backend does not declare are reported as skipped, never edited out.
 *
 * The backend is created once, while the suite is collected, and closed after it.
 *
 * @example
 * // my-backend.test.ts
 * describeBackendConformance('my backend', () => myBackend(url), {
 *   processBackend: { module: new URL('./make-my-backend.js', import.meta.url).href },
 *   cleanup: (namespace) => deleteKeysStartingWith(namespace),
 * })
 */
export function describeBackendConformance(
  name: string,
  makeBackend: () => Backend | Promise<Backend>,
  options: ConformanceOptions = {},
): void {
  describe(`${name}: latchkey backend conformance`, async () => {
    const backend = await makeBackend()
    const env = createEnv(options, () => backend)
    afterEach(() => env.closeAll())
    afterAll(async () => {
      await env.closeAll()
      await backend.close()
      await options.cleanup?.(env.namespace)
    })
    mutexCases(env)
    kindCases(env)
    multiCases(env)
    inputCases(env)
    processCases(env)
    semaphoreCases(env)
    modelCases(env)
    operatorCases(env)
    leaderCases(env)
  })
}
