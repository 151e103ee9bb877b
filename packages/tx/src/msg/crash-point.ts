/**
 * The producer's crash points around its local transaction, for the kill -9 tests: a process started with
 * `LATCHKEY_TX_CRASH_AT=<label>` prints `latchkey-tx crash-point <label>` and kills itself with SIGKILL there,
 * leaving its database and the log exactly as a power cut would. Without the variable a point does nothing.
 * (Kept apart from the coordinator's points, whose crash matrix enumerates its own labels.)
 */
const target = process.env.LATCHKEY_TX_CRASH_AT

/** The producer's crash points. */
export const MSG_CRASH_POINTS = [
  /** The barrier row and the business writes are in the open local transaction; COMMIT not sent. */
  'msg:before-local-commit',
  /** The local transaction committed; `submitted` is not written yet (the lost-submit case). */
  'msg:after-local-commit',
] as const

/** One of {@link MSG_CRASH_POINTS}. */
export type MsgCrashPoint = (typeof MSG_CRASH_POINTS)[number]

/** Marks a crash point; does nothing unless `LATCHKEY_TX_CRASH_AT` names it. */
export function msgCrashPoint(label: MsgCrashPoint): void {
  if (target !== label) return
  // A write to a pipe is synchronous on Linux: the parent reads the line even though we stop right after.
  process.stdout.write(`latchkey-tx crash-point ${label}\n`)
  process.kill(process.pid, 'SIGKILL')
}
