import { randomUUID } from 'node:crypto'
import { LeaderElection } from './leader.js'
import type { Leader } from './leader-types.js'
import { type LockHandle, resolveSettings } from './lock.js'
import { checkName, checkOptions, checkSignal } from './validate.js'

/**
 * Checks `Locks.leader` options (before any I/O) and starts a participant contending for the mutex `handle`:
 * waiting without limit, renewing its lease every `ttlMs / 3`, until `close()`, `options.signal` or `Locks.close()`.
 */
export function openLeader(handle: LockHandle, options: unknown): Leader {
  const o = checkOptions('options', options)
  const id = o.id === undefined ? randomUUID() : checkName('id', o.id)
  const signal = o.signal === undefined ? undefined : checkSignal('signal', o.signal)
  const settings = resolveSettings(
    handle.ctx,
    { waitMs: Number.POSITIVE_INFINITY, ...(o.ttlMs === undefined ? {} : { ttlMs: o.ttlMs }) },
    true,
  )
  const stops = signal === undefined ? [handle.ctx.closing] : [handle.ctx.closing, signal]
  return new LeaderElection(handle, settings, id, stops)
}
