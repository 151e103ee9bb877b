/**
 * The operator calls of `Locks`: see who holds and waits on a lock, list the locks in use, break a stuck lock.
 * Names are the application's (the namespace is added and stripped here); the backend answers by key.
 */
import type { LockInspection, LockSummary } from '../backend/inspection.js'
import type { Backend, BackendCapabilities, LockKind } from '../backend/types.js'
import { UnsupportedError } from '../errors.js'
import { lockKey } from './lock-key.js'
import { checkInteger, checkName, checkOptions } from './validate.js'

/** Options of `Locks.list`. */
export interface ListOptions {
  /** Only names starting with this. Default: every name in the namespace. */
  prefix?: string
  /** At most this many locks. Default 100. */
  limit?: number
}

/** The operator calls, bound to one backend and namespace. */
export interface OperatorCalls {
  inspect(name: string): Promise<LockInspection>
  list(options?: ListOptions): Promise<LockSummary[]>
  forceRelease(name: string): Promise<boolean>
}

const DEFAULT_LIST_LIMIT = 100

/** The operator calls of a `Locks` over `backend` in `namespace`. */
export function operatorCalls(backend: Backend, capabilities: BackendCapabilities, namespace: string): OperatorCalls {
  const keyOf = (name: unknown) => {
    const checked = checkName('name', name)
    return lockKey(namespace, checked)
  }
  const base = lockKey(namespace, '')
  const nameOf = (key: string) => key.slice(base.length)
  const unsupported = (what: 'inspect' | 'list') =>
    new UnsupportedError(
      `The ${backend.name} backend cannot ${what} locks (capabilities.${what} is false)${what === 'list' ? '; inspect a lock by its name instead' : ''}`,
    )
  return {
    async inspect(name) {
      const key = keyOf(name)
      if (!capabilities.inspect || backend.inspect === undefined) throw unsupported('inspect')
      const state = await backend.inspect(key)
      return { ...state, name: nameOf(state.name) }
    },
    async list(options = {}) {
      const o = checkOptions('options', options)
      const prefix = o.prefix === undefined ? '' : checkName('prefix', o.prefix, true)
      const limit = o.limit === undefined ? DEFAULT_LIST_LIMIT : checkInteger('limit', o.limit, 1)
      if (!capabilities.list || backend.list === undefined) throw unsupported('list')
      const found = await backend.list({ prefix: lockKey(namespace, prefix), limit })
      return found.map((s) => ({ ...s, name: nameOf(s.name) }))
    },
    async forceRelease(name) {
      const key = keyOf(name)
      // The mutex/read-write family and the semaphore of one name are separate states in every backend.
      const kinds: LockKind[] = capabilities.kinds.includes('semaphore') ? ['mutex', 'semaphore'] : ['mutex']
      if (!capabilities.kinds.includes('mutex')) kinds.shift()
      const dropped = await Promise.all(kinds.map((kind) => backend.forceRelease({ key, kind })))
      return dropped.some(Boolean)
    },
  }
}
