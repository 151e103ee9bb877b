/**
 * The XA protocol's own crash points, beside the coordinator's (`coordinator/crash-point.ts`, whose labels the
 * saga/TCC crash matrix must all reach): the instants between an XA statement and the next log write. Same
 * switch: inert unless the process starts with `LATCHKEY_TX_CRASH_AT=<label> <branch>` (or `trace`), then it
 * prints `latchkey-tx crash-point <key>` and sends itself `LATCHKEY_TX_CRASH_SIGNAL` (default SIGKILL).
 *
 * - `xa:after-start b1`: the branch is open (`XA START` / `BEGIN`), its statements not run yet
 * - `xa:after-prepare b1`: the branch is prepared (phase 1 of that branch done)
 * - `xa:after-commit b1`: phase 2 committed that branch, others may still be prepared
 *
 * The commit decision is the coordinator's `after-log:status submitted`.
 */
const target = process.env.LATCHKEY_TX_CRASH_AT

/** The XA labels. */
export const XA_CRASH_POINT_LABELS = ['xa:after-start', 'xa:after-prepare', 'xa:after-commit'] as const

/** Marks an XA crash point of a branch; does nothing unless `LATCHKEY_TX_CRASH_AT` is set. */
export function xaCrashPoint(label: (typeof XA_CRASH_POINT_LABELS)[number], branch: string): void {
  if (target === undefined) return
  const key = `${label} ${branch}`
  if (target !== 'trace' && target !== key) return
  process.stdout.write(`latchkey-tx crash-point ${key}\n`)
  if (target === key) process.kill(process.pid, (process.env.LATCHKEY_TX_CRASH_SIGNAL ?? 'SIGKILL') as NodeJS.Signals)
}
