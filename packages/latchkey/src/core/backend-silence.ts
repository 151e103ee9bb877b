/**
 * The errors of an acquire that ended because the backend, not a holder, stopped it: its server failed every
 * try, or left one unanswered, until the wait (`waitMs`) or the patience for silence (`unavailableMs`) ran out.
 * Blaming a holder there ("raise waitMs or find the holder") would send an operator after a lock nobody holds.
 */
import { BackendUnavailableError } from '../errors.js'
import { redactText } from '../redact-url.js'
import type { LockTarget } from './context.js'

/** What the backend last did in this acquire, when it did not answer "held". */
export type Silence =
  | { readonly kind: 'failed'; readonly error: unknown }
  | { readonly kind: 'unanswered'; readonly sentMsAgo: number; readonly earlier?: unknown }

/** Which limit ran out. */
export type SilenceLimit = { readonly option: 'waitMs' | 'unavailableMs'; readonly ms: number }

/** The `cause` given for a call still unanswered: no error exists yet, so one describes the call. */
export function unansweredCause(backend: string, sentMsAgo: number): Error {
  return new Error(`${backend} backend: tryAcquire sent ${Math.round(sentMsAgo)} ms ago has not answered`)
}

/**
 * A `BackendUnavailableError` naming the lock, the backend, the limit that ran out and what the backend did.
 *
 * @example
 * // Lock "order:42" was not acquired: the redis backend was unreachable until waitMs (2000 ms) ran out
 * // (last error: Connection is closed.); nothing is known about a holder. Check the server, or raise waitMs.
 */
export function backendSilenceError(
  target: LockTarget,
  silence: Silence,
  limit: SilenceLimit,
): BackendUnavailableError {
  const backend = target.ctx.backend.name
  // The last error the backend gave is the cause; with none yet, one describes the unanswered call.
  const cause =
    silence.kind === 'failed' ? silence.error : (silence.earlier ?? unansweredCause(backend, silence.sentMsAgo))
  // Shown whenever the backend gave an error: always for `failed`, and for `unanswered` after earlier failures.
  const lastError =
    silence.kind === 'failed' || silence.earlier !== undefined ? redactText(messageOf(cause)) : undefined
  const what =
    silence.kind === 'failed'
      ? `was unreachable until ${limit.option} (${limit.ms} ms) ran out (last error: ${lastError})`
      : `did not answer before ${limit.option} (${limit.ms} ms) ran out (a tryAcquire sent ${Math.round(silence.sentMsAgo)} ms earlier is still unanswered${lastError === undefined ? '' : `; last error: ${lastError}`})`
  return new BackendUnavailableError(
    `Lock "${target.name}" was not acquired: the ${backend} backend ${what}; nothing is known about a holder. Check the server, or raise ${limit.option}`,
    { lockName: target.name, cause },
  )
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error)
}
