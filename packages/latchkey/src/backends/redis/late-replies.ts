/**
 * What the Redis backend does with a grant its caller will not keep: a try's grant that came after the command's
 * deadline (the caller was told "unavailable"), or one a replica wait refused, is given back at once by its token,
 * and a release's reply that came late may still carry a grant to a waiter of this process.
 */
import type { HolderRef } from '../../backend/types.js'
import { lateGrantToken } from './acquire-replies.js'
import type { KeyCache, KeyLayout } from './key-layout.js'
import type { LuaScript } from './lua-script.js'
import type { ReleaseNotifier } from './release-notifier.js'
import { passed, released } from './release-replies.js'
import type { ScriptCalls } from './script-calls.js'
import type { MutexPass, RedisScripts, ReleaseReply } from './scripts/index.js'

/** The parts of the backend a give-back needs. */
export interface GrantReturnDeps {
  readonly calls: ScriptCalls
  readonly scripts: RedisScripts
  readonly keys: KeyCache
  readonly layout: KeyLayout
  readonly notifier: ReleaseNotifier
  /** release.lua's "publish even when no watcher is registered" flag ('1' for the Redisson layout). */
  readonly publishAlways: string
}

/** Gives back the grant `token` of `request.owner`, unless the owner was granted again since. */
export async function releaseGrant(deps: GrantReturnDeps, request: HolderRef, token: string): Promise<void> {
  const { keys, channel } = deps.keys.keysOf(request)
  const args = [
    deps.layout.fieldOf(request.owner),
    channel,
    deps.publishAlways,
    deps.notifier.wakeChannel ?? '-',
    token,
  ]
  released(deps.notifier, await deps.calls.run(deps.scripts.release, keys, args, request))
}

/**
 * A script's reply that came after its command's deadline (see ScriptCalls.run): a grant is given back at once,
 * since the caller was told "unavailable"; a release may still carry a grant to a waiter of this process.
 */
export function lateReply(
  deps: GrantReturnDeps,
  script: LuaScript<unknown>,
  reply: unknown,
  grantTo: HolderRef | undefined,
): void {
  if (grantTo !== undefined) {
    const token = lateGrantToken(reply)
    if (token !== undefined) releaseGrant(deps, grantTo, token).catch(() => undefined)
  } else if (typeof reply === 'string' && script === deps.scripts.release) {
    released(deps.notifier, reply as ReleaseReply)
  } else if (typeof reply === 'string' && script === deps.scripts.passMutex) {
    passed(deps.notifier, reply as MutexPass)
  }
}
