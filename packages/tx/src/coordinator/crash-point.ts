/**
 * Named instants where the crash tests stop a coordinator process: after each log write, around each branch
 * call. Off unless the process was started with `LATCHKEY_TX_CRASH_AT`, read once here, so an ordinary process
 * pays one comparison per point and builds no string.
 *
 * - `LATCHKEY_TX_CRASH_AT=trace`: prints `latchkey-tx crash-point <key>` for every point reached (how the
 *   tests enumerate the points a scenario passes through).
 * - `LATCHKEY_TX_CRASH_AT=<key>`: prints the same line at that point, then sends itself
 *   `LATCHKEY_TX_CRASH_SIGNAL` (default `SIGKILL`; `SIGSTOP` pauses it there for a fencing test).
 *
 * A key is the label, then for a branch operation ` <branch>/<op>#<attempt>`, for a status its value:
 * `after-log:branch-running b/action#1`, `after-log:status aborting`.
 */
const target = process.env.LATCHKEY_TX_CRASH_AT

/** The labels, for documentation and for the test that checks each one is reached. */
export const CRASH_POINT_LABELS = [
  'after-log:created',
  'after-log:branch-running',
  'after-branch-call',
  'after-log:branch-succeeded',
  'after-log:branch-retry',
  'after-log:parked',
  'after-log:status',
] as const

/** One of {@link CRASH_POINT_LABELS}. */
export type CrashPointLabel = (typeof CRASH_POINT_LABELS)[number]

/** Marks a crash point; does nothing unless `LATCHKEY_TX_CRASH_AT` is set. */
export function crashPoint(label: CrashPointLabel, detail?: string, op?: string, attempt?: number): void {
  if (target === undefined) return
  const key =
    op === undefined ? (detail === undefined ? label : `${label} ${detail}`) : `${label} ${detail}/${op}#${attempt}`
  if (target !== 'trace' && target !== key) return
  // A write to a pipe is synchronous on Linux: the parent reads the line even though we stop right after.
  process.stdout.write(`latchkey-tx crash-point ${key}\n`)
  if (target === key) process.kill(process.pid, (process.env.LATCHKEY_TX_CRASH_SIGNAL ?? 'SIGKILL') as NodeJS.Signals)
}
