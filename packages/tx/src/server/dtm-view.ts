/**
 * A stored transaction shown as DTM's `query` shows it (`{ transaction, branches }`, DTM's field names and
 * statuses: prepared, submitted, aborting, succeed, failed), plus latchkey-tx's own status and history.
 */
import type { BranchRecord, TxRecord, TxStatus } from '../types.js'
import type { DtmRegistration, DtmTrans } from './dtm-request.js'
import { branchId } from './dtm-saga.js'
import { DTM_TCC, DTM_XA, hasRegisteredBranches } from './dtm-tcc.js'

/** DTM's status of a transaction: a parked one is still unfinished for DTM (DTM would keep retrying it). */
export function dtmStatus(record: { status: TxStatus; parkedFrom: TxStatus | null }): string {
  if (record.status === 'succeeded') return 'succeed'
  if (record.status === 'parked') return record.parkedFrom ?? 'submitted'
  return record.status
}

/** The body of DTM's `query`. */
export interface DtmQuery {
  readonly transaction: Record<string, unknown>
  readonly branches: Record<string, unknown>[]
}

const iso = (ms: number) => new Date(ms).toISOString()

function branchStatus(b: BranchRecord | undefined): string {
  if (b === undefined || b.status === 'pending' || b.status === 'running') return 'prepared'
  return b.status === 'succeeded' ? 'succeed' : 'failed'
}

/** The transaction and its branches in DTM's shape. */
export function dtmTransaction(record: TxRecord, registrations: readonly DtmRegistration[]): DtmQuery {
  const input = record.input as Partial<DtmTrans> | undefined
  const transType = record.name === DTM_TCC ? 'tcc' : record.name === DTM_XA ? 'xa' : record.kind
  const transaction = {
    gid: record.gid,
    trans_type: transType,
    status: dtmStatus(record),
    latchkey_status: record.status,
    name: record.name,
    steps: input?.steps ?? [],
    payloads: input?.payloads ?? [],
    custom_data: input?.custom_data ?? '',
    rollback_reason: record.error ?? '',
    create_time: iso(record.createdAt),
    update_time: iso(record.updatedAt),
  }
  const branches: Record<string, unknown>[] = []
  if (hasRegisteredBranches(record.name)) {
    const confirm = record.branches.find((b) => b.op === 'confirm')
    const cancel = record.branches.find((b) => b.op === 'cancel')
    // DTM names an XA branch's phase-2 operations commit and rollback.
    const names =
      transType === 'xa' ? { cancel: 'rollback', confirm: 'commit' } : { cancel: 'cancel', confirm: 'confirm' }
    for (const r of registrations) {
      for (const [op, b] of [
        ['cancel', cancel],
        ['confirm', confirm],
      ] as const) {
        branches.push({
          gid: record.gid,
          url: r[op],
          data: r.data,
          branch_id: r.branch_id,
          op: names[op],
          status: branchStatus(b),
        })
      }
    }
  } else {
    const steps = input?.steps ?? []
    steps.forEach((step, i) => {
      for (const op of ['compensate', 'action'] as const) {
        const b = record.branches.find((x) => x.id === branchId(i) && x.op === op)
        branches.push({
          gid: record.gid,
          url: step[op],
          data: input?.payloads?.[i] ?? '',
          branch_id: branchId(i),
          op,
          status: branchStatus(b),
          attempts: b?.attempts ?? 0,
          last_error: b?.lastError ?? null,
        })
      }
    })
  }
  return { transaction, branches }
}
