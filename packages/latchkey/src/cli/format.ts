/** Text output of the `latchkey` CLI: aligned tables of holders, waiters and locks. */
import type { HolderInfo, LockInspection, LockSummary, WaiterInfo } from '../backend/inspection.js'

/** Columns aligned with spaces, a header line first. */
export function table(headers: readonly string[], rows: readonly (readonly string[])[]): string {
  const widths = headers.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)))
  const line = (cells: readonly string[]) =>
    cells
      .map((c, i) => c.padEnd(widths[i] ?? 0))
      .join('  ')
      .trimEnd()
  return [line(headers), ...rows.map(line)].join('\n')
}

/** JSON with bigints (tokens) as strings. */
export function jsonText(value: unknown, indent = 2): string {
  return JSON.stringify(value, (_, v: unknown) => (typeof v === 'bigint' ? v.toString() : v), indent)
}

/** `12.3s`, `-` when unknown. */
export function remaining(at: number | undefined, now: number): string {
  if (at === undefined) return '-'
  const ms = at - now
  return ms >= 10_000 ? `${Math.round(ms / 1_000)}s` : `${(ms / 1_000).toFixed(1)}s`
}

const time = (ms: number | undefined) => (ms === undefined ? '-' : new Date(ms).toISOString().slice(11, 23))

function holderRows(holders: readonly HolderInfo[], now: number): string[][] {
  return holders.map((h) => [
    h.owner,
    h.kind + (h.permits === undefined ? '' : `/${h.permits}`),
    h.token === undefined ? '-' : h.token.toString(),
    remaining(h.expiresAt, now),
    h.count === undefined ? '-' : String(h.count),
  ])
}

function waiterRows(waiters: readonly WaiterInfo[]): string[][] {
  return waiters.map((w, i) => [String(i + 1), w.owner, w.kind, time(w.since)])
}

/** `inspect`: the lock's kind, its holders and its waiters. */
export function inspectText(state: LockInspection, now = Date.now()): string {
  const head = `lock ${JSON.stringify(state.name)}: ${state.kind === undefined ? 'free' : state.kind}`
  const holders =
    state.holders.length === 0
      ? 'holders: none'
      : `holders: ${state.holders.length}\n${table(['OWNER', 'KIND', 'TOKEN', 'EXPIRES IN', 'COUNT'], holderRows(state.holders, now))}`
  const waiters =
    state.waiters.length === 0
      ? 'waiters: none'
      : `waiters: ${state.waiters.length}\n${table(['#', 'OWNER', 'KIND', 'SINCE (UTC)'], waiterRows(state.waiters))}`
  return `${head}\n${holders}\n${waiters}`
}

/** `list`: one line per lock. */
export function listText(locks: readonly LockSummary[]): string {
  if (locks.length === 0) return '(no locks held or waited on)'
  return table(
    ['NAME', 'KIND', 'HOLDERS', 'WAITERS'],
    locks.map((l) => [l.name, l.kind ?? '-', String(l.holders), String(l.waiters)]),
  )
}
