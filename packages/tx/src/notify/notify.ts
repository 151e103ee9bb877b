import { randomUUID } from 'node:crypto'
import { checkId } from '../branch.js'
import type { TxDefinition } from '../coordinator/definition.js'
import type { RunResult, Starter } from '../coordinator/run-result.js'
import type { NotifyInput } from './deliver.js'
import { DELIVER, driveNotify } from './notify-drive.js'
import { parseDuration, parseSchedule } from './schedule.js'

/** Options of `tc.notify(options)`. */
export interface NotifyOptions {
  /** Where the body is POSTed (as JSON, with `Idempotency-Key: <gid>`); 2xx means delivered. */
  url: string
  /** The JSON body (stored in the log). */
  body: unknown
  /**
   * The waits between tries: a try at once, then one after each wait; when the last fails the notification is
   * `parked` (event `parked`). `'250ms'`, `'5s'`, `'30m'`, `'1h'` or ms. Default `['1s', '5s', '30s', '5m']`.
   */
  schedule?: readonly (string | number)[]
  /**
   * A URL asked before every try but the first: POST `{ gid, body }`; 2xx (unless `{ "received": false }`)
   * means the receiver already has it (the notification succeeds without sending), 404 that it has not.
   */
  reconcile?: string
  /** Extra headers of both calls (stored in the log with the notification). */
  headers?: Record<string, string>
  /** Deadline of one call. Default 3 000 (`'3s'`). */
  timeout?: string | number
  /** The global transaction id (the receiver's idempotency key). Default: a random UUID. */
  gid?: string
  /** Resolve with the outcome (`succeeded` or `parked`) instead of once it is durable. Default false. */
  wait?: boolean
}

/** Every coordinator registers this: a notification carries everything in its input. */
export const NOTIFY_DEFINITION: TxDefinition = {
  kind: 'notify',
  name: 'notify',
  branches: () => [{ id: DELIVER, op: 'action', seq: 0 }],
  knows: (ids) => ids.every((id) => id === DELIVER),
  drive: driveNotify,
}

function httpUrl(what: string, value: unknown): string {
  if (typeof value !== 'string') throw new TypeError(`latchkey-tx: notify ${what} must be a URL string`)
  let protocol: string
  try {
    protocol = new URL(value).protocol
  } catch {
    throw new TypeError(`latchkey-tx: notify ${what} cannot parse ${JSON.stringify(value)} as a URL`)
  }
  if (protocol !== 'http:' && protocol !== 'https:') {
    throw new RangeError(`latchkey-tx: notify ${what} needs an http: or https: URL, received ${protocol}`)
  }
  return value
}

/** Validates the options (no I/O) into what the log stores. */
export function notifyInput(options: NotifyOptions): NotifyInput {
  if (typeof options !== 'object' || options === null) {
    throw new TypeError('latchkey-tx: notify needs { url, body, schedule?, reconcile? }')
  }
  const headers = options.headers ?? {}
  if (typeof headers !== 'object' || headers === null || Object.values(headers).some((v) => typeof v !== 'string')) {
    throw new TypeError('latchkey-tx: notify headers must be an object of strings')
  }
  const timeoutMs = parseDuration('notify timeout', options.timeout ?? 3_000)
  if (timeoutMs < 1) throw new RangeError('latchkey-tx: notify timeout must be at least 1 ms')
  let body: string | undefined
  try {
    body = JSON.stringify(options.body)
  } catch (error) {
    throw new TypeError(
      `latchkey-tx: notify body must be JSON-serializable (it is stored in the log): ${String(error)}`,
    )
  }
  if (body === undefined) throw new TypeError('latchkey-tx: notify needs a body (JSON)')
  return {
    url: httpUrl('url', options.url),
    body: options.body,
    schedule: parseSchedule(options.schedule),
    reconcile: options.reconcile === undefined ? null : httpUrl('reconcile', options.reconcile),
    headers: { ...headers },
    timeoutMs,
  }
}

/** `tc.notify(options)`: validates, writes the notification (status `submitted`) and drives it. */
export function startNotify(options: NotifyOptions, start: Starter): Promise<RunResult> {
  try {
    const input = notifyInput(options)
    if (options.gid !== undefined) checkId('gid', options.gid)
    if (options.wait !== undefined && typeof options.wait !== 'boolean') {
      throw new TypeError(`latchkey-tx: notify wait must be a boolean, received ${String(options.wait)}`)
    }
    return start(NOTIFY_DEFINITION, input, { gid: options.gid ?? randomUUID(), wait: options.wait ?? false }, false)
  } catch (error) {
    return Promise.reject(error)
  }
}
