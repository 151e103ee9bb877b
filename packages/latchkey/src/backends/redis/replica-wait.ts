/**
 * The backend's `waitReplicas` option: after a lock write, WAIT until enough replicas acknowledged it, else undo
 * the write and fail retryably (RedisBackendOptions.waitReplicas says what this does and does not protect).
 */
import type { LockRef } from '../../backend/types.js'
import { BackendUnavailableError } from '../../errors.js'
import type { RedisCommander } from './client-adapter.js'
import type { CommandDeadlines } from './command-deadlines.js'
import { toLockError } from './script-calls.js'

/** How many replicas must acknowledge each write, and for how long to wait for them. */
export interface ReplicaWait {
  readonly replicas: number
  readonly timeoutMs: number
}

/** WAITs for `want.replicas`; on too few acknowledgements (or a failed WAIT) runs `undo` and fails. */
export async function waitForReplicas(
  commander: RedisCommander,
  deadlines: CommandDeadlines,
  want: ReplicaWait,
  ref: LockRef,
  undo?: () => Promise<unknown>,
): Promise<void> {
  const { replicas, timeoutMs } = want
  let acked: number
  try {
    acked = await deadlines.track(commander.waitReplicas(replicas, timeoutMs), timeoutMs)
  } catch (error) {
    await undo?.().catch(() => undefined)
    throw toLockError(error, ref.key, 'WAIT', commander.server)
  }
  if (acked >= replicas) return
  await undo?.().catch(() => undefined)
  throw new BackendUnavailableError(
    `Only ${acked} of ${replicas} replicas of Redis ${commander.server} acknowledged the write of lock "${ref.key}" within ${timeoutMs} ms; add replicas, raise waitReplicas.timeoutMs or lower waitReplicas.replicas`,
    { lockName: ref.key },
  )
}
