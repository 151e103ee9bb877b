import type { TxStore } from '../store/types.js'
import type { TxRecord } from '../types.js'
import type { XaResources } from './xa-resources.js'

/** What the orphan sweep decides for one in-doubt branch, from its transaction's log entry. */
export function orphanDecision(record: TxRecord | undefined): 'commit' | 'rollback' | 'leave' {
  if (record === undefined || record.kind !== 'xa') return 'leave' // not this log's: another log's coordinator decides
  const parked = record.status === 'parked'
  if (record.status === 'succeeded' || (parked && record.parkedFrom === 'submitted')) return 'commit'
  if (record.status === 'failed' || (parked && record.parkedFrom === 'aborting')) return 'rollback'
  return 'leave'
}

/**
 * The resource side of recovery: every prepared branch of ours on every known resource (`XA RECOVER`,
 * `pg_prepared_xacts`, filtered to latchkey-tx's XIDs) whose transaction is *finished* in the log (or parked
 * after its decision) is committed or rolled back as the log says. Unfinished transactions are left to the
 * transaction-level recovery, which takes their lease first: an undecided branch may belong to a live
 * coordinator. What this catches: a branch prepared by a coordinator that was fenced out meanwhile, or a
 * transaction whose branches a manual action left behind.
 */
export async function sweepOrphans(
  resources: XaResources,
  store: TxStore,
  onError: (error: unknown) => void,
): Promise<number> {
  const records = new Map<string, TxRecord | undefined>()
  let settled = 0
  for (const resource of resources.list()) {
    try {
      for (const xid of await resource.recover()) {
        if (!records.has(xid.gid)) records.set(xid.gid, await store.load(xid.gid))
        const decision = orphanDecision(records.get(xid.gid))
        if (decision === 'leave') continue
        if (await resource.settle(xid, decision === 'commit')) settled++
      }
    } catch (error) {
      onError(error)
    }
  }
  return settled
}
