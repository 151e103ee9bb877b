/**
 * What an acquire script's reply says: the grant as the core sees it (acquire.lua's reply), and the token of a
 * grant that came back after its call gave up (acquire.lua's reply, or acquire-mutex.lua's bare token), which
 * the backend then gives back at once, since its caller was told "unavailable".
 */
import type { AcquireRequest, AcquireResult } from '../../backend/types.js'
import type { AcquireReply } from './scripts/index.js'

/**
 * A grant as the core sees it, `sentAt` being when the try was sent. Granted earlier by a release (see handoff in
 * scripts/handoff.lua): the lease started `ttl - remaining` before this try ran (in whole server milliseconds,
 * hence one more).
 */
export function grantResult(
  request: AcquireRequest,
  reply: AcquireReply & { granted: true },
  sentAt: number,
): AcquireResult {
  const token = BigInt(reply.token)
  if (reply.remainingMs === undefined) return { acquired: true, token }
  return { acquired: true, token, grantedAt: sentAt - (request.ttlMs - reply.remainingMs) - 1 }
}

/**
 * The token a late acquire reply granted, or undefined when it granted nothing: acquire.lua's reply, or
 * acquire-mutex.lua's token (a bigint; undefined when the lock was held).
 */
export function lateGrantToken(reply: unknown): string | undefined {
  if (typeof reply === 'string' || typeof reply === 'bigint') return String(reply)
  if (reply === undefined || reply === null) return undefined
  const acquired = reply as AcquireReply
  return acquired.granted ? acquired.token : undefined
}
