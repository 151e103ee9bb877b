/**
 * Reading `{ gid, branch, op, input }` from a branch request, in either of the two shapes a coordinator sends:
 * latchkey-tx's `http()` branches POST it as the JSON body; DTM puts `gid`, `trans_type`, `branch_id` and `op`
 * in the query string and the transaction's payload in the body.
 */
import { checkId } from '../branch.js'
import type { BranchOp } from '../types.js'

/** The operations a branch route answers: those of sagas and TCC, which the barrier guards. */
export type RouteOp = Extract<BranchOp, 'action' | 'compensate' | 'try' | 'confirm' | 'cancel'>

/** The operations a branch route answers. */
export const BRANCH_OPS: readonly RouteOp[] = ['action', 'compensate', 'try', 'confirm', 'cancel']

/** One call of a branch operation, as the handler receives it. */
export interface BranchCall<I = unknown> {
  readonly gid: string
  readonly branch: string
  readonly op: RouteOp
  /** The transaction's input (latchkey-tx) or the request body (DTM). */
  readonly input: I
  /** DTM's `trans_type` (`saga`, `tcc`, ...) when the call came DTM's way. */
  readonly transType?: string
}

/** Why a request is not a branch call: the plugin answers 400 with this message. */
export class BadBranchCall extends Error {
  override readonly name = 'BadBranchCall'
}

type Fields = Record<string, unknown>

function field(from: Fields, name: string): unknown {
  const value = from[name]
  return Array.isArray(value) ? value[0] : value
}

/** Parses a branch request's query and body; throws {@link BadBranchCall} naming the missing or bad part. */
export function readBranchCall(query: unknown, body: unknown): BranchCall {
  const q = (typeof query === 'object' && query !== null ? query : {}) as Fields
  const dtm = field(q, 'gid') !== undefined || field(q, 'op') !== undefined
  const b = (typeof body === 'object' && body !== null ? body : {}) as Fields
  const source = dtm ? q : b
  const where = dtm ? 'query string' : 'JSON body'
  const gid = field(source, 'gid')
  const branch = dtm ? field(q, 'branch_id') : field(b, 'branch')
  const op = field(source, 'op')
  try {
    checkId('gid', gid)
    checkId(dtm ? 'branch_id' : 'branch', branch)
  } catch (error) {
    throw new BadBranchCall(`${(error as Error).message.replace('latchkey-tx: ', '')} (in the ${where})`)
  }
  if (!BRANCH_OPS.includes(op as RouteOp)) {
    throw new BadBranchCall(
      `op must be one of ${BRANCH_OPS.join(', ')} (in the ${where}), received ${JSON.stringify(op)}`,
    )
  }
  const transType = dtm ? field(q, 'trans_type') : undefined
  return {
    gid: gid as string,
    branch: branch as string,
    op: op as RouteOp,
    input: dtm ? body : b.input,
    ...(typeof transType === 'string' ? { transType } : {}),
  }
}
