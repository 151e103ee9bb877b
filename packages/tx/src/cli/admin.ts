/**
 * The admin commands (`list`, `show`, `retry`, `abort`) on a store. `retry` and `abort` drive the transaction
 * from this process (it must not be driven elsewhere at that moment): DTM sagas and TCCs are resumable here
 * because their definitions are rebuilt from the stored input; other transactions need the application that
 * defined them (their steps are code), so they are refused with that reason.
 */
import { createCoordinator } from '../coordinator/coordinator.js'
import type { RunResult } from '../coordinator/run-result.js'
import type { DtmRegistration, DtmTrans } from '../server/dtm-request.js'
import { DTM_SAGA_PREFIX } from '../server/dtm-saga.js'
import { DtmService } from '../server/dtm-service.js'
import { HELPER_NAMES, hasRegisteredBranches } from '../server/dtm-tcc.js'
import type { TxKind, TxRecord, TxStatus, TxSummary } from '../types.js'

/** What a command prints: `json` for `--json`, `text` otherwise. */
export interface CommandOutput {
  readonly json: unknown
  readonly text: string
  readonly exitCode: number
}

/** Options shared by the admin commands. */
export interface AdminOptions {
  readonly store: string
  readonly status?: TxStatus | undefined
  readonly kind?: TxKind | undefined
  readonly limit?: number | undefined
  /** `list`: include the TCC service's registration and decision records. */
  readonly all?: boolean | undefined
}

/** Runs `fn` with a non-recovering coordinator (and the DTM definitions) on the store, then closes it. */
async function withCoordinator<T>(
  store: string,
  fn: (tc: ReturnType<typeof createCoordinator>, dtm: DtmService) => Promise<T>,
): Promise<T> {
  const tc = createCoordinator({ store, recover: false })
  try {
    return await fn(tc, new DtmService(tc))
  } finally {
    await tc.close()
  }
}

/** `list`. */
export function list(options: AdminOptions): Promise<TxSummary[]> {
  return withCoordinator(options.store, async (tc) => {
    const rows = await tc.list({ status: options.status, kind: options.kind, limit: options.limit ?? 50 })
    return options.all === true ? rows : rows.filter((t) => !HELPER_NAMES.includes(t.name))
  })
}

/** `show GID`: the record, and for a DTM TCC the branches its application registered. */
export function show(
  store: string,
  gid: string,
): Promise<{ tx: TxRecord; registered: DtmRegistration[] | undefined } | undefined> {
  return withCoordinator(store, async (tc, dtm) => {
    const tx = await tc.get(gid)
    if (tx === undefined) return undefined
    return { tx, registered: hasRegisteredBranches(tx.name) ? await dtm.tccs.registered(gid) : undefined }
  })
}

/** `retry GID` / `abort GID`: resolves with the outcome, or with a message when it was only requested. */
export function manual(store: string, gid: string, action: 'retry' | 'abort'): Promise<RunResult | string> {
  return withCoordinator(store, async (tc, dtm) => {
    const record = await tc.get(gid)
    if (record === undefined) throw new Error(`no transaction ${gid} in the store`)
    if (record.name.startsWith(DTM_SAGA_PREFIX)) dtm.sagas.for(record.input as DtmTrans)
    if (action === 'abort' && hasRegisteredBranches(record.name) && record.status === 'prepared') {
      // A DTM TCC or XA waiting for its application: the abort is the application's decision, which whoever
      // drives the transaction (the server) acts on.
      const held = await dtm.tccs.decide(gid, 'abort', 'abort by latchkey-tx abort')
      if (held !== 'abort') throw new Error(`transaction ${gid} has already decided to ${held}`)
      return 'abort decided; the coordinator driving it cancels every registered branch'
    }
    return action === 'retry' ? tc.retry(gid) : tc.abort(gid)
  })
}
