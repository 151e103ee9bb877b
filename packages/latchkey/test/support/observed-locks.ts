/**
 * Real locks for the metrics and tracing tests: a `Locks` on the memory, SQLite or Redis backend with a unique
 * namespace, and a cleanup that closes it and removes what it left on the server.
 */
import { randomUUID } from 'node:crypto'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { Backend } from '../../src/backend/types.js'
import { memoryBackend } from '../../src/backends/memory/index.js'
import { sqliteBackend } from '../../src/backends/sqlite/index.js'
import type { LockEventHandler } from '../../src/core/events.js'
import { createLocks, type Locks } from '../../src/core/locks.js'
import { createIoredisBackend, deleteKeys } from './redis-backend-module.js'

/** One backend to observe: its `backend` label, and how to open and clean it up. */
export interface ObservedBackend {
  readonly name: 'memory' | 'sqlite' | 'redis'
  open(): { backend: Backend; cleanup(namespace: string): Promise<void> }
}

export const observedBackends: readonly ObservedBackend[] = [
  { name: 'memory', open: () => ({ backend: memoryBackend(), cleanup: async () => undefined }) },
  {
    name: 'sqlite',
    open: () => {
      const dir = mkdtempSync(join(tmpdir(), 'latchkey-metrics-'))
      const backend = sqliteBackend({ path: join(dir, 'locks.db') })
      return { backend, cleanup: async () => rmSync(dir, { recursive: true, force: true }) }
    },
  },
  { name: 'redis', open: () => ({ backend: createIoredisBackend(), cleanup: deleteKeys }) },
]

const opened: Array<() => Promise<void>> = []

/** Opens `Locks` on a fresh backend of `kind`, closed by {@link closeObservedLocks}. */
export function observedLocks(kind: ObservedBackend, onEvent: LockEventHandler): Locks {
  const { backend, cleanup } = kind.open()
  const namespace = `metrics-${randomUUID()}`
  const locks = createLocks({ backend, namespace, onEvent })
  opened.push(async () => {
    await locks.close()
    await backend.close()
    await cleanup(namespace)
  })
  return locks
}

/** Closes every `Locks` opened since the last call (for `afterEach`). */
export async function closeObservedLocks(): Promise<void> {
  for (const close of opened.splice(0)) await close()
}
