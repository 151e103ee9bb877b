/**
 * The Redis backend's operator reads: a name's holders and waiters, both lock families read by scripts/inspect.lua
 * (read-only), and the names SCAN finds under a prefix (on each master of an ioredis Cluster). redis-inspect.ts
 * reads the replies.
 */
import {
  inspection,
  type ListRequest,
  type LockInspection,
  type LockSummary,
  lockKeysOf,
  summariesOf,
} from '../../backend/inspection.js'
import type { RedisCommander } from './client-adapter.js'
import type { KeyCache, KeyLayout } from './key-layout.js'
import type { LuaScript } from './lua-script.js'
import { holdersFrom, type InspectReply, lockKeysFromScan, waitersFrom } from './redis-inspect.js'
import type { ScriptCalls } from './script-calls.js'

/** What the reads use of the backend. */
export interface OperatorReadDeps {
  readonly calls: ScriptCalls
  readonly script: LuaScript<InspectReply>
  readonly keys: KeyCache
  readonly layout: KeyLayout
  readonly commander: RedisCommander
}

/** The holders and waiters of both families of `key`. */
export async function inspectLock(deps: OperatorReadDeps, key: string): Promise<LockInspection> {
  const families = (['mutex', 'semaphore'] as const).map(async (kind) => {
    const ref = { key, kind }
    const keys = deps.keys.keysOf(ref).stateKeys
    const reply = await deps.calls.run(deps.script, keys, [], ref)
    return { holders: holdersFrom(reply, keys[0] !== keys[1]), waiters: waitersFrom(reply) }
  })
  const states = await Promise.all(families)
  return inspection(
    key,
    states.flatMap((s) => s.holders),
    states.flatMap((s) => s.waiters),
  )
}

/** SCANs for the layout's keys under the request's prefix, then reads each lock with `inspect`. */
export async function listLocks(
  deps: OperatorReadDeps,
  request: ListRequest,
  inspect: (key: string) => Promise<LockInspection>,
): Promise<LockSummary[]> {
  const found = await Promise.all(deps.layout.patternsFor(request.prefix).map((p) => deps.commander.scan(p)))
  const keys = lockKeysOf(lockKeysFromScan(found.flat(), deps.layout), request)
  return summariesOf(keys, request.limit, inspect)
}
