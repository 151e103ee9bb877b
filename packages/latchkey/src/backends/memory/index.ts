import type { Backend } from '../../backend/types.js'
import { MemoryBackend } from './memory-backend.js'

export { MemoryBackend }

/**
 * A backend that keeps locks in this process's memory. Every capability (fencing, fair, read-write,
 * semaphore, lock-delay, release notifications) but no sharing across processes.
 *
 * @example
 * const locks = createLocks({ backend: memoryBackend() })
 */
export function memoryBackend(): Backend {
  return new MemoryBackend()
}
