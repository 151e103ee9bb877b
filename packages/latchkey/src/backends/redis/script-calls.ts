/**
 * How the Redis backend sends its scripts: EVALSHA (EVAL when the server lost the script) under the command deadline,
 * failures turned into the errors the core expects, and a reply that outlived its deadline handed to the backend
 * (it may carry a grant nobody will take).
 */
import type { HolderRef, LockRef } from '../../backend/types.js'
import { BackendUnavailableError, isLockError } from '../../errors.js'
import { isNoScript, isReplyError, type RedisCommander } from './client-adapter.js'
import type { CommandDeadlines } from './command-deadlines.js'
import type { LuaScript } from './lua-script.js'

const TRANSIENT_REPLY = /^(LOADING|READONLY|MASTERDOWN|CLUSTERDOWN|TRYAGAIN|BUSY|NOREPLICAS|MOVED|ASK)\b/

/**
 * Called with a reply that came after its command's deadline (the caller was told "unavailable" already):
 * `grantTo` is the acquire the script ran for, if any.
 */
export type LateReply = (script: LuaScript<unknown>, reply: unknown, grantTo: HolderRef | undefined) => void

/** Sends scripts on one commander; one per backend. */
export class ScriptCalls {
  constructor(
    private readonly commander: RedisCommander,
    private readonly deadlines: CommandDeadlines,
    private readonly late: LateReply,
  ) {}

  /**
   * Runs one script by EVALSHA (EVAL when the server lost it) under the command deadline. A reply that outlived
   * its deadline goes to the backend's `late` handler with `grantTo` (the acquire it ran for): a grant the caller
   * was told failed has no holder and would block everyone for a whole TTL. One promise per call (the client's
   * own `then` feeds it directly): this is the hot path of every lock, and each extra layer costs a microtask
   * turn.
   */
  run<Reply>(
    script: LuaScript<Reply>,
    keys: readonly string[],
    args: readonly string[],
    ref: LockRef,
    grantTo?: HolderRef,
  ): Promise<Reply> {
    const commander = this.commander
    if (commander.offline) {
      return Promise.reject(
        new BackendUnavailableError(
          `Redis ${commander.server} is unreachable (the ${commander.library} client is reconnecting) for lock "${ref.key}"; retry later`,
          { lockName: ref.key },
        ),
      )
    }
    return new Promise((resolve, reject) => {
      const fail = (error: unknown): void => reject(toLockError(error, ref.key, script.name, commander.server))
      const entry = this.deadlines.start(fail)
      const done = (raw: unknown): void => {
        const reply = script.reply(raw)
        if (this.deadlines.finish(entry)) resolve(reply)
        else this.late(script, reply, grantTo)
      }
      const failed = (error: unknown): void => {
        if (this.deadlines.finish(entry)) fail(error)
      }
      commander.evalsha(script, keys, args).then(done, (error: unknown) => {
        if (isNoScript(error)) commander.eval(script, keys, args).then(done, failed)
        else failed(error)
      })
    })
  }
}

/** Connection failures and transient server states are retryable; other error replies are bugs: rethrown. */
export function toLockError(error: unknown, lockName: string, what: string, server: string): unknown {
  if (isLockError(error)) return error
  if (isReplyError(error) && !TRANSIENT_REPLY.test(error.message)) return error
  const reason = error instanceof Error ? error.message : String(error)
  return new BackendUnavailableError(
    `Redis ${server} failed on ${what} for lock "${lockName}": ${reason}; retry later`,
    {
      lockName,
      cause: error,
    },
  )
}
