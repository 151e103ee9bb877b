import { createHash } from 'node:crypto'
import { ACQUIRE } from './acquire.js'
import { FORCE_RELEASE, IS_LOCKED, LEAVE_QUEUE, RELEASE, RENEW } from './holder-scripts.js'

/** A Lua script with its SHA1, run by EVALSHA and loaded by EVAL on NOSCRIPT. */
export interface LuaScript {
  readonly name: string
  readonly source: string
  readonly sha: string
}

/** Every script of the Redis backend; each primitive of the backend contract is exactly one of these. */
export interface RedisScripts {
  readonly acquire: LuaScript
  readonly release: LuaScript
  readonly renew: LuaScript
  readonly leaveQueue: LuaScript
  readonly isLocked: LuaScript
  readonly forceRelease: LuaScript
}

/** How long a fencing counter outlives the last token it issued, by default: 24 hours. */
export const DEFAULT_FENCE_IDLE_MS = 86_400_000

function script(name: string, body: string, fenceIdleMs: number): LuaScript {
  // A literal rather than an argument: one more argument per call costs the client more than a script per
  // setting costs the server (a backend loads one set).
  const source = `local FENCE_IDLE_MS = ${fenceIdleMs}\n${body}`
  return Object.freeze({ name, source, sha: createHash('sha1').update(source).digest('hex') })
}

const built = new Map<number, RedisScripts>()

/**
 * The scripts with fencing counters that expire `fenceIdleMs` after their last token (0: never), built once
 * per setting.
 */
export function scriptsFor(fenceIdleMs: number): RedisScripts {
  let scripts = built.get(fenceIdleMs)
  if (scripts === undefined) {
    scripts = Object.freeze({
      acquire: script('acquire', ACQUIRE, fenceIdleMs),
      release: script('release', RELEASE, fenceIdleMs),
      renew: script('renew', RENEW, fenceIdleMs),
      leaveQueue: script('leaveQueue', LEAVE_QUEUE, fenceIdleMs),
      isLocked: script('isLocked', IS_LOCKED, fenceIdleMs),
      forceRelease: script('forceRelease', FORCE_RELEASE, fenceIdleMs),
    })
    built.set(fenceIdleMs, scripts)
  }
  return scripts
}

/** The scripts of the default layout with the default fencing-counter expiry. */
export const SCRIPTS = scriptsFor(DEFAULT_FENCE_IDLE_MS)
