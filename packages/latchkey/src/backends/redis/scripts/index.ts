/**
 * The Redis backend's scripts: one `.lua` file per primitive of the backend contract (acquire, release, renew,
 * leave-queue, is-locked, force-release), which `--#include` the shared parts they need (base.lua, holders.lua,
 * grant.lua, handoff.lua, handoff-mutex.lua, free-mutex.lua, next-fence.lua), plus the uncontended mutex's own short acquire and release
 * (acquire-mutex.lua, release-mutex.lua) and the contended mutex's short release (pass-mutex.lua). To read one expanded: `readLuaFile(new URL('./acquire.lua', import.meta.url))`.
 */
import { type LuaScript, luaScript, readLuaFile } from '../lua-script.js'
import type { InspectReply } from '../redis-inspect.js'

/** What the acquire script answers, as the backend sees it. */
export type AcquireReply =
  | { readonly granted: true; readonly token: string; readonly remainingMs: number | undefined }
  | { readonly granted: false; readonly retryAfterMs: number | undefined; readonly permitsInForce?: undefined }
  | { readonly granted: false; readonly permitsInForce: number }

/** Every script of the Redis backend, each with its reply. */
export interface RedisScripts {
  readonly acquire: LuaScript<AcquireReply>
  /** A free mutex's grant in the latchkey layout (never registers a wait): its token, undefined when held. */
  readonly acquireMutex: LuaScript<bigint | undefined>
  /**
   * acquireMutex leaving the fencing counter's expiry as it is (unless the counter restarts): for a process that
   * sent acquireMutex on the same lock within the last `fenceIdleMs / 8` (next-fence.lua gives the argument).
   */
  readonly acquireMutexKeepFence: LuaScript<bigint | undefined>
  /** Whether the caller's lease was dropped, or the grant it made to a watcher of the caller's own process. */
  readonly release: LuaScript<ReleaseReply>
  /** A mutex's release in the latchkey layout when nobody waits. */
  readonly releaseMutex: LuaScript<MutexRelease>
  /** A mutex's release in the latchkey layout handing it to its oldest watcher. */
  readonly passMutex: LuaScript<MutexPass>
  /** True when the lease was extended. */
  readonly renew: LuaScript<boolean>
  /** How many registrations were removed. */
  readonly leaveQueue: LuaScript<number>
  readonly isLocked: LuaScript<boolean>
  /** True when anything was held. */
  readonly forceRelease: LuaScript<boolean>
  /** The raw records of one family (redis-inspect.ts reads them). */
  readonly inspect: LuaScript<InspectReply>
}

/**
 * release.lua's reply: whether the caller's lease was dropped, or (dropped, and the lock went to a watcher of the
 * caller's own process) the grant message `g <field> <token>` that would otherwise have been published to it.
 */
export type ReleaseReply = boolean | `g ${string}`

/** release-mutex.lua's reply: the lease was dropped, was not held, or someone waits (nothing done: run `release`). */
export type MutexRelease = 'released' | 'not-held' | 'waited'

/**
 * pass-mutex.lua's reply: as release-mutex.lua's (`waited`: nothing done, run `release`), or the grant it made to a
 * watcher of the caller's own process, as release.lua's.
 */
export type MutexPass = MutexRelease | `g ${string}`

/** How long a fencing counter outlives the last token it issued, by default: 24 hours. */
export const DEFAULT_FENCE_IDLE_MS = 86_400_000

/** acquire.lua's "code value [remainingMs]". */
function acquireReply(raw: unknown): AcquireReply {
  const [code, value, remaining] = String(raw).split(' ') as [string, string, string?]
  if (code === '1')
    return { granted: true, token: value, remainingMs: remaining === undefined ? undefined : Number(remaining) }
  if (code === '2') return { granted: false, permitsInForce: Number(value) }
  const retry = Number(value)
  return { granted: false, retryAfterMs: retry > 0 ? retry : undefined }
}

/** inspect.lua's reply, every element as text (the clients answer numbers or strings, Buffers never asked). */
function inspectReply(raw: unknown): InspectReply {
  const [now, pttl, ...lists] = raw as [unknown, unknown, ...unknown[][]]
  return [Number(now), Number(pttl), ...lists.map((l) => (l ?? []).map(String))] as InspectReply
}

const isOne = (raw: unknown): boolean => Number(raw) === 1
const releaseReply = (raw: unknown): ReleaseReply =>
  typeof raw === 'string' && raw.startsWith('g ') ? (raw as `g ${string}`) : Number(raw) === 1
const mutexRelease = (raw: unknown): MutexRelease => {
  const n = Number(raw)
  return n === 1 ? 'released' : n === 2 ? 'waited' : 'not-held'
}
const mutexPass = (raw: unknown): MutexPass =>
  typeof raw === 'string' && raw.startsWith('g ') ? (raw as `g ${string}`) : mutexRelease(raw)
const count = (raw: unknown): number => Number(raw)
/**
 * acquire-mutex.lua's integer reply: the token, or 0 when the lock is held. The clients answer an integer reply as a
 * number, exact below 2^53 as the token is in Lua: BigInt of it directly, where a string of a 16-digit number (no
 * cached conversion) and its parse back cost the uncontended acquire about a microsecond.
 */
const tokenOrNone = (raw: unknown): bigint | undefined => {
  if (typeof raw === 'number') return raw === 0 ? undefined : BigInt(raw)
  return Number(raw) === 0 ? undefined : BigInt(String(raw))
}

const read = (file: string) => readLuaFile(new URL(`./${file}.lua`, import.meta.url))
const SOURCES = {
  acquire: read('acquire'),
  acquireMutex: read('acquire-mutex'),
  release: read('release'),
  releaseMutex: read('release-mutex'),
  passMutex: read('pass-mutex'),
  renew: read('renew'),
  leaveQueue: read('leave-queue'),
  isLocked: read('is-locked'),
  forceRelease: read('force-release'),
  inspect: read('inspect'),
}

// Literals rather than arguments: one more argument per call costs the client more than a script per setting
// costs the server (a backend loads one set). FENCE_REFRESH false: the fencing counter's expiry is refreshed only
// when it restarts (next-fence.lua).
const withFenceIdle = (fenceIdleMs: number, source: string, refresh = true) =>
  `local FENCE_IDLE_MS, FENCE_REFRESH = ${fenceIdleMs}, ${refresh}\n${source}`

const built = new Map<number, RedisScripts>()

/**
 * The scripts with fencing counters that expire `fenceIdleMs` after their last token (0: never), built once
 * per setting.
 */
export function scriptsFor(fenceIdleMs: number): RedisScripts {
  let scripts = built.get(fenceIdleMs)
  if (scripts === undefined) {
    const source = (name: keyof typeof SOURCES) => withFenceIdle(fenceIdleMs, SOURCES[name])
    scripts = Object.freeze({
      acquire: luaScript('acquire', source('acquire'), acquireReply),
      acquireMutex: luaScript('acquireMutex', source('acquireMutex'), tokenOrNone),
      // Named as the script it is built from: the same file, one literal apart.
      acquireMutexKeepFence: luaScript(
        'acquireMutex',
        withFenceIdle(fenceIdleMs, SOURCES.acquireMutex, false),
        tokenOrNone,
      ),
      release: luaScript('release', source('release'), releaseReply),
      releaseMutex: luaScript('releaseMutex', source('releaseMutex'), mutexRelease),
      passMutex: luaScript('passMutex', source('passMutex'), mutexPass),
      renew: luaScript('renew', source('renew'), isOne),
      leaveQueue: luaScript('leaveQueue', source('leaveQueue'), count),
      isLocked: luaScript('isLocked', source('isLocked'), isOne),
      forceRelease: luaScript('forceRelease', source('forceRelease'), isOne),
      inspect: luaScript('inspect', source('inspect'), inspectReply),
    })
    built.set(fenceIdleMs, scripts)
  }
  return scripts
}

/** The scripts of the default layout with the default fencing-counter expiry. */
export const SCRIPTS = scriptsFor(DEFAULT_FENCE_IDLE_MS)
