import { describe, expect, it } from 'vitest'
import { MemoryBackend } from '../backends/memory/memory-backend.js'
import { createLocks } from '../core/locks.js'
import { UnsupportedError } from '../errors.js'
import { countingBackend } from '../testing/counting-backend.js'
import { ALL_KINDS, BackendBase, DEFAULT_CAPABILITIES, defineCapabilities } from './backend-base.js'
import type { AcquireRequest, Backend, BackendCapabilities, HolderRef, LockRef, RenewRequest } from './types.js'

/** A third-party backend that declares only what differs from the defaults (here: fencing), over memory state. */
class FencedMutexBackend extends BackendBase {
  readonly name = 'fenced-mutex'
  override readonly capabilities = defineCapabilities({ fencing: 'native' })
  private readonly inner = new MemoryBackend()
  tryAcquire(request: AcquireRequest) {
    return this.inner.tryAcquire(request)
  }
  renew(request: RenewRequest) {
    return this.inner.renew(request)
  }
  release(request: HolderRef) {
    return this.inner.release(request)
  }
  isLocked(ref: LockRef & { readonly permits: number }) {
    return this.inner.isLocked(ref)
  }
  forceRelease(ref: LockRef) {
    return this.inner.forceRelease(ref)
  }
}

describe('BackendBase and defineCapabilities', () => {
  it('fills every capability not declared with its default, frozen', () => {
    const caps = defineCapabilities({ fencing: 'native', kinds: ['mutex', 'read'] })
    expect(caps).toEqual({ ...DEFAULT_CAPABILITIES, fencing: 'native', kinds: ['mutex', 'read'] })
    expect(Object.isFrozen(caps)).toBe(true)
    expect(Object.isFrozen(caps.kinds)).toBe(true)
    expect(defineCapabilities({ kinds: ALL_KINDS }).kinds).toBe(ALL_KINDS)
  })

  it('a backend that extends the base gets the default leaveQueue and close, and works with createLocks', async () => {
    const backend = new FencedMutexBackend()
    const locks = createLocks({ backend, requireFencing: true })
    const lease = await locks.mutex('a').acquire()
    expect(lease.token).toBeGreaterThan(0n)
    expect(await locks.mutex('a').tryAcquire()).toBeUndefined()
    await lease.release()
    // Mutex only by default: other kinds are refused before any I/O.
    expect(() => locks.semaphore('s', { permits: 2 })).toThrow(UnsupportedError)
    await expect(backend.leaveQueue({ key: 'a', kind: 'mutex', owner: 'x' })).resolves.toBeUndefined()
    await locks.close()
    await backend.close()
  })

  it('a structural backend written before a capability existed is read with that capability default', async () => {
    // A plain object over the memory backend's primitives, whose capabilities lack `lockDelay` and `kinds`.
    const { lockDelay: _noDelay, kinds: _noKinds, ...older } = new MemoryBackend().capabilities
    const backend: Backend = {
      ...countingBackend(new MemoryBackend()).backend,
      capabilities: older as BackendCapabilities,
    }
    // lockDelay defaults to false: lockDelayMs is refused as unsupported, not silently accepted.
    expect(() => createLocks({ backend, lockDelayMs: 100 })).toThrow(UnsupportedError)
    // kinds defaults to mutex only: a mutex works, a semaphore is refused before any I/O.
    const locks = createLocks({ backend })
    await (await locks.mutex('m').acquire()).release()
    expect(() => locks.semaphore('s', { permits: 2 })).toThrow(UnsupportedError)
    await locks.close()
  })
})
