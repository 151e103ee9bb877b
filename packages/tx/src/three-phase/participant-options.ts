import { checkPrefix } from '../store/schema.js'
import { DEFAULT_3PC_TABLE } from './participant-sql.js'

const MAX_MS = 2_147_483_647

function duration(name: string, value: unknown, fallback: number): number {
  if (value === undefined) return fallback
  if (typeof value !== 'number' || !Number.isFinite(value) || value < 1 || value > MAX_MS) {
    throw new RangeError(
      `latchkey-tx: threePhaseParticipant ${name} must be 1 to ${MAX_MS} ms, received ${String(value)}`,
    )
  }
  return value
}

/** Validates a participant's options before any I/O. */
export function checkParticipantOptions(o: unknown): { timeoutMs: number; checkEveryMs: number; table: string } {
  if (typeof o !== 'object' || o === null) {
    throw new TypeError('latchkey-tx: threePhaseParticipant needs { db, preCommit, doCommit, abort?, canCommit? }')
  }
  const options = o as Record<string, unknown>
  for (const name of ['preCommit', 'doCommit']) {
    if (typeof options[name] !== 'function') {
      throw new TypeError(`latchkey-tx: threePhaseParticipant ${name} must be a function (trx, ctx) => ...`)
    }
  }
  for (const name of ['canCommit', 'abort', 'onEvent']) {
    if (options[name] !== undefined && typeof options[name] !== 'function') {
      throw new TypeError(
        `latchkey-tx: threePhaseParticipant ${name} must be a function, received ${typeof options[name]}`,
      )
    }
  }
  const timeoutMs = duration('timeoutMs', options.timeoutMs, 10_000)
  const checkEveryMs = duration('checkEveryMs', options.checkEveryMs, Math.max(1, Math.min(1_000, timeoutMs / 4)))
  const table = options.table === undefined ? DEFAULT_3PC_TABLE : options.table
  return { timeoutMs, checkEveryMs, table: checkPrefix(table) }
}
