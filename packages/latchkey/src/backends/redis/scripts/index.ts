import { createHash } from 'node:crypto'
import { ACQUIRE } from './acquire.js'
import { FORCE_RELEASE, IS_LOCKED, LEAVE_QUEUE, RELEASE, RENEW } from './holder-scripts.js'

/** A Lua script with its SHA1, run by EVALSHA and loaded by EVAL on NOSCRIPT. */
export interface LuaScript {
  readonly name: string
  readonly source: string
  readonly sha: string
}

function script(name: string, source: string): LuaScript {
  return Object.freeze({ name, source, sha: createHash('sha1').update(source).digest('hex') })
}

/** Every script of the Redis backend; each primitive of the backend contract is exactly one of these. */
export const SCRIPTS = Object.freeze({
  acquire: script('acquire', ACQUIRE),
  release: script('release', RELEASE),
  renew: script('renew', RENEW),
  leaveQueue: script('leaveQueue', LEAVE_QUEUE),
  isLocked: script('isLocked', IS_LOCKED),
  forceRelease: script('forceRelease', FORCE_RELEASE),
})
