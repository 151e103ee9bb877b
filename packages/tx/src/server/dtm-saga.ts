/**
 * DTM sagas on the coordinator. A DTM saga brings its steps with it, while the coordinator resumes a
 * transaction from a definition registered under (kind, name). So each saga *shape* (the number of steps and,
 * for a concurrent saga, its `orders`) is one definition, named after the shape, whose steps read their URLs
 * and payloads from the transaction's stored input: any process that sees the stored input can register the
 * same definition again and resume the transaction. Step ids are DTM's branch ids: `01`, `02`, ...
 */
import { createHash } from 'node:crypto'
import type { Coordinator } from '../coordinator/coordinator.js'
import { TxError } from '../errors.js'
import type { Saga } from '../saga/saga.js'
import { callDtmBranch } from './dtm-branch-call.js'
import { DtmBadRequest, type DtmTrans } from './dtm-request.js'

/** The stored input of a DTM saga: the submit body and, with `timeout_to_fail`, the epoch ms it fails at. */
export type DtmSagaInput = DtmTrans & { readonly deadlineAt?: number | null }

/** Prefix of the definitions' names. */
export const DTM_SAGA_PREFIX = 'dtm-saga-'

/** DTM's default branch request timeout (3 s). */
export const DEFAULT_REQUEST_TIMEOUT_S = 3

/** DTM's branch id of step `i` (0-based). */
export const branchId = (i: number) => String(i + 1).padStart(2, '0')

/** Per step, the steps it comes after: DTM's `custom_data` `{ "orders": { "1": [0] }, "concurrent": true }`. */
function stepOrder(trans: DtmTrans): string[][] | undefined {
  if (trans.custom_data === '') return undefined
  let custom: { concurrent?: unknown; orders?: unknown }
  try {
    custom = JSON.parse(trans.custom_data) as typeof custom
  } catch {
    throw new DtmBadRequest('custom_data must be JSON')
  }
  if (custom.concurrent !== true) return undefined
  const orders = (custom.orders ?? {}) as Record<string, unknown>
  const n = trans.steps.length
  return trans.steps.map((_, i) => {
    const before = orders[String(i)] ?? []
    if (!Array.isArray(before) || before.some((b) => !Number.isInteger(b) || b < 0 || b >= i)) {
      // The coordinator defines a DAG step after the steps it depends on: an order must point backwards.
      throw new DtmBadRequest(`custom_data.orders["${i}"] must list earlier step indexes (0 to ${Math.min(i, n) - 1})`)
    }
    return (before as number[]).map(branchId)
  })
}

/** The definition name of a saga's shape. */
export function sagaName(trans: DtmTrans): string {
  const order = stepOrder(trans)
  const n = trans.steps.length
  if (order === undefined) return `${DTM_SAGA_PREFIX}${n}`
  return `${DTM_SAGA_PREFIX}${n}-c${createHash('sha256').update(JSON.stringify(order)).digest('hex').slice(0, 16)}`
}

/** The sagas of one coordinator, by shape: registered on first use (or when a stored one is resumed). */
export class DtmSagas {
  private readonly byName = new Map<string, Saga<DtmSagaInput>>()

  constructor(private readonly tc: Coordinator) {}

  /** Whether the shape named `name` is registered here. */
  has(name: string): boolean {
    return this.byName.has(name)
  }

  /** The saga definition for `trans`'s shape, registered if new. */
  for(trans: DtmTrans): Saga<DtmSagaInput> {
    const name = sagaName(trans)
    const known = this.byName.get(name)
    if (known !== undefined) return known
    const saga = this.tc.saga<DtmSagaInput>(name)
    const order = stepOrder(trans)
    trans.steps.forEach((_, i) => {
      const call = (op: 'action' | 'compensate') => (ctx: { input: DtmSagaInput; signal: AbortSignal }) => {
        const t = ctx.input
        // DTM's timeout_to_fail for a saga: past it, no forward step is tried again; the saga compensates.
        if (op === 'action' && typeof t.deadlineAt === 'number' && Date.now() > t.deadlineAt) {
          throw new TxError(`timeout_to_fail (${t.timeout_to_fail} s) passed`, { code: 'DTM_TIMEOUT', gid: t.gid })
        }
        const step = t.steps[i]
        return callDtmBranch({
          url: step?.[op] ?? '',
          gid: t.gid,
          transType: 'saga',
          branchId: branchId(i),
          op,
          payload: t.payloads?.[i],
          headers: t.branch_headers,
          timeoutMs: (t.request_timeout || DEFAULT_REQUEST_TIMEOUT_S) * 1000,
          signal: ctx.signal,
        })
      }
      saga.step(branchId(i), {
        action: call('action'),
        compensate: call('compensate'),
        ...(order === undefined ? {} : { after: order[i] ?? [] }),
      })
    })
    this.byName.set(name, saga)
    return saga
  }
}
