import { checkId } from '../branch.js'
import type { ListFilter, TxStore } from '../store/types.js'
import { TX_KINDS, type TxStatus } from '../types.js'
import type { RunOptions } from './run-result.js'

/** Statuses the recovery sweep resumes. */
export const UNFINISHED: readonly TxStatus[] = ['prepared', 'submitted', 'aborting']

const STATUSES: readonly TxStatus[] = ['prepared', 'submitted', 'aborting', 'succeeded', 'failed', 'parked']
const KINDS = TX_KINDS
const STORE_METHODS = ['init', 'create', 'write', 'load', 'list', 'unfinished', 'close'] as const

/** Checks a store handed in as an object. */
export function checkStore(store: unknown): TxStore {
  const s = store as Partial<TxStore> | undefined
  const missing = STORE_METHODS.filter((m) => typeof s?.[m] !== 'function')
  if (typeof s !== 'object' || s === null || missing.length > 0) {
    throw new TypeError(
      `latchkey-tx: store must be a URL or a TxStore such as sqliteStore({ path })${missing.length > 0 ? ` (missing ${missing.join(', ')})` : ''}`,
    )
  }
  return s as TxStore
}

/** Checks `run`'s options and that the input survives the JSON round trip the log makes. */
export function checkRunOptions(options: RunOptions | undefined, input: unknown): RunOptions {
  if (options !== undefined && (typeof options !== 'object' || options === null)) {
    throw new TypeError(`latchkey-tx: run options must be an object { gid?, wait? }, received ${String(options)}`)
  }
  if (options?.gid !== undefined) checkId('gid', options.gid)
  if (options?.wait !== undefined && typeof options.wait !== 'boolean') {
    throw new TypeError(`latchkey-tx: wait must be a boolean, received ${String(options.wait)}`)
  }
  try {
    JSON.stringify(input)
  } catch (error) {
    throw new TypeError(`latchkey-tx: the input must be JSON-serializable (it is stored in the log): ${String(error)}`)
  }
  return options ?? {}
}

/** Checks `list`'s filter. */
export function checkFilter(filter: ListFilter): void {
  if (typeof filter !== 'object' || filter === null) {
    throw new TypeError(
      `latchkey-tx: list filter must be an object { status?, kind?, limit? }, received ${String(filter)}`,
    )
  }
  if (filter.status !== undefined && !STATUSES.includes(filter.status)) {
    throw new RangeError(`latchkey-tx: status must be one of ${STATUSES.join(', ')}, received ${String(filter.status)}`)
  }
  if (filter.kind !== undefined && !KINDS.includes(filter.kind)) {
    throw new RangeError(`latchkey-tx: kind must be one of ${KINDS.join(', ')}, received ${String(filter.kind)}`)
  }
  const limit = filter.limit
  if (limit !== undefined && (!Number.isInteger(limit) || limit < 1 || limit > 10_000)) {
    throw new RangeError(`latchkey-tx: limit must be an integer from 1 to 10000, received ${String(limit)}`)
  }
}
