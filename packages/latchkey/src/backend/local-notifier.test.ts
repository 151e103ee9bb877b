import { describe, expect, it } from 'vitest'
import { memoryBackend } from '../backends/memory/index.js'
import { createLocks } from '../core/locks.js'
import { eventually } from '../testing/eventually.js'
import { LocalNotifier } from './local-notifier.js'
import type { Backend } from './types.js'

describe('local notifications', () => {
  it('a release wakes one mutex waiter, every reader, and passes an unused wake-up on', async () => {
    const notifier = new LocalNotifier()
    const [m1, m2] = [notifier.subscribe('k', 'mutex'), notifier.subscribe('k', 'mutex')]
    const reader = notifier.subscribe('k', 'read')
    const woken: string[] = []
    const watch = (name: string, sub: ReturnType<LocalNotifier['subscribe']>) =>
      sub.wait(200).then(() => woken.push(name))
    const waits = [watch('m1', m1), watch('m2', m2), watch('reader', reader)]
    notifier.notify('k')
    await eventually('m1 and the reader woke', () => woken.length >= 2)
    expect(woken.sort()).toEqual(['m1', 'reader'])
    // m1 leaves with a wake-up it never used: m2 gets it.
    notifier.notify('k')
    m1.close()
    await Promise.all(waits)
    expect(woken).toContain('m2')
    m2.close()
    reader.close()
    expect(notifier.size).toBe(0)
  })

  it('handoff among N waiters of one process costs about one try per acquisition, not N', async () => {
    const inner = memoryBackend()
    let tries = 0
    const counting: Backend = Object.assign(Object.create(Object.getPrototypeOf(inner)), inner, {
      tryAcquire: (r: Parameters<Backend['tryAcquire']>[0]) => {
        tries++
        return inner.tryAcquire(r)
      },
    })
    const locks = createLocks({ backend: counting })
    const lock = locks.mutex('hot')
    await Promise.all(Array.from({ length: 100 }, () => lock.withLock(() => new Promise((r) => setTimeout(r, 1)))))
    await locks.close()
    // With a wake-all herd this is about 100 * 100 / 2 = 5,000 tries.
    expect(tries).toBeLessThan(3 * 100)
  })
})
