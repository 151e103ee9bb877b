import { expect, it } from 'vitest'
import type { LockKind } from '../backend/types.js'
import type { Lock } from '../core/lock.js'
import { createLocks, type Locks } from '../core/locks.js'
import { countingBackend } from './counting-backend.js'
import type { SuiteEnv } from './env.js'

const KINDS: readonly LockKind[] = ['mutex', 'fair', 'read', 'write', 'semaphore']
const EXCLUSIVE: ReadonlySet<LockKind> = new Set(['mutex', 'fair', 'write'])

function handle(locks: Locks, kind: LockKind, name: string): Lock {
  if (kind === 'mutex') return locks.mutex(name)
  if (kind === 'fair') return locks.fairMutex(name)
  if (kind === 'semaphore') return locks.semaphore(name, { permits: 1 })
  return locks.readWrite(name)[kind]
}

/**
 * Whether `multi` must refuse two kinds of one name of one `Locks`: the mutex, fair mutex and read-write kinds of
 * a name are one lock (every backend keeps them in one state), so two different ones would wait for each other,
 * except a read beside a write, which the write covers. A semaphore lives apart and is taken beside any of them.
 */
function refused(a: LockKind, b: LockKind): boolean {
  if (a === b || a === 'semaphore' || b === 'semaphore') return false
  return !((a === 'read' && b === 'write') || (a === 'write' && b === 'read'))
}

/** Whether holding `held` keeps a probe of kind `probe` (another caller, same name) out. */
function blocks(held: readonly LockKind[], probe: LockKind): boolean {
  if (probe === 'semaphore') return held.includes('semaphore')
  const family = held.filter((k) => k !== 'semaphore')
  if (family.some((k) => EXCLUSIVE.has(k))) return true
  return family.length > 0 && EXCLUSIVE.has(probe)
}

/** multi over several kinds of one name. */
export function multiCases(env: SuiteEnv): void {
  it('multi over two kinds of one name: granted and exclusive, or refused before any I/O; never waits for itself', async () => {
    const kinds = KINDS.filter((k) => env.supports(k))
    const other = env.locks()
    for (const [i, a] of kinds.entries()) {
      for (const b of kinds.slice(i)) {
        const name = env.uniq(`multi-${a}-${b}`)
        const what = `${a} + ${b}`
        const { backend, calls } = countingBackend(env.backend())
        const locks = createLocks({ backend, namespace: env.namespace })
        try {
          if (refused(a, b)) {
            for (const pair of [
              [a, b],
              [b, a],
            ] as const) {
              expect(() => locks.multi(pair.map((k) => handle(locks, k, name))), what).toThrow(RangeError)
            }
            expect(calls(), what).toBe(0)
            continue
          }
          for (const pair of [
            [a, b],
            [b, a],
          ] as const) {
            const lease = await locks.multi(pair.map((k) => handle(locks, k, name))).acquire({ waitMs: env.ms(3_000) })
            for (const probe of kinds) {
              const got = await handle(other, probe, name).tryAcquire()
              expect(got === undefined, `${what}, probe ${probe}`).toBe(blocks([a, b], probe))
              await got?.release()
            }
            await lease.release()
          }
          for (const probe of kinds) {
            const got = await handle(other, probe, name).tryAcquire()
            expect(got, `${what} released, probe ${probe}`).toBeDefined()
            await got?.release()
          }
        } finally {
          await locks.close()
        }
      }
    }
  })
}
