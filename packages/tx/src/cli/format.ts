/** Text output of the admin CLI: a plain aligned table and a transaction's branch timeline. */
import type { DtmRegistration } from '../server/dtm-request.js'
import type { TxRecord, TxSummary } from '../types.js'

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

const time = (ms: number) => new Date(ms).toISOString().replace('T', ' ').replace('Z', '')

/** `list`: one line per transaction. */
export function listTable(list: readonly TxSummary[]): string {
  if (list.length === 0) return '(no transactions)'
  return table(
    ['GID', 'KIND', 'NAME', 'STATUS', 'UPDATED', 'ERROR'],
    list.map((t) => [
      t.gid,
      t.kind,
      t.name,
      t.status === 'parked' ? `parked (from ${t.parkedFrom})` : t.status,
      time(t.updatedAt),
      (t.error ?? '').slice(0, 60),
    ]),
  )
}

/** `show`: the transaction, its branches (and a DTM TCC's registered ones), then its history as a timeline. */
export function showText(tx: TxRecord, registered?: readonly DtmRegistration[]): string {
  const head = [
    `gid:     ${tx.gid}`,
    `kind:    ${tx.kind} "${tx.name}"`,
    `status:  ${tx.status}${tx.parkedFrom === null ? '' : ` (parked from ${tx.parkedFrom})`}`,
    `created: ${time(tx.createdAt)}   updated: ${time(tx.updatedAt)}`,
    ...(tx.error === null ? [] : [`error:   ${tx.error}`]),
  ]
  const branches = table(
    ['BRANCH', 'OP', 'STATUS', 'ATTEMPTS', 'LAST ERROR'],
    tx.branches.map((b) => [b.id, b.op, b.status, String(b.attempts), (b.lastError ?? '').slice(0, 80)]),
  )
  const start = tx.history[0]?.at ?? tx.createdAt
  const timeline = table(
    ['+MS', 'EVENT', 'BRANCH', 'DETAIL'],
    tx.history.map((h) => [
      `+${h.at - start}`,
      h.type,
      h.branch === null ? '-' : `${h.branch}/${h.op}`,
      (h.detail ?? '').slice(0, 100),
    ]),
  )
  const dtm =
    registered === undefined
      ? ''
      : `\n\nregistered by the application (DTM TCC)\n${table(
          ['BRANCH_ID', 'CONFIRM', 'CANCEL'],
          registered.map((r) => [r.branch_id, r.confirm, r.cancel]),
        )}`
  return `${head.join('\n')}\n\nbranches\n${branches}${dtm}\n\ntimeline (from ${time(start)})\n${timeline}`
}
