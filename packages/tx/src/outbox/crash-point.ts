/**
 * Labelled crash points for the kill -9 tests: a process started with `LATCHKEY_TX_CRASH_AT=<label>` (or
 * `<label>:<n>`, the n-th time that point is reached) kills itself with SIGKILL there, leaving the database and
 * the broker exactly as a power cut would. Without the variable a crash point does nothing.
 */
const seen = new Map<string, number>()

/** Labels of the relay's crash points. */
export type CrashLabel = 'after-publish' | 'after-confirm'

/** Kills this process with SIGKILL when `LATCHKEY_TX_CRASH_AT` names this point (and its count is reached). */
export function crashPoint(label: CrashLabel): void {
  const wanted = process.env.LATCHKEY_TX_CRASH_AT
  if (wanted === undefined || wanted === '') return
  const [name, nth = '1'] = wanted.split(':')
  if (name !== label) return
  const count = (seen.get(label) ?? 0) + 1
  seen.set(label, count)
  if (count === Number(nth)) process.kill(process.pid, 'SIGKILL')
}
