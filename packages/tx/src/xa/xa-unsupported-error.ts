import { TxError } from '../errors.js'

/**
 * The database cannot take part in XA two-phase commit as it is configured: thrown by `tc.xa` before the branch's
 * first statement, naming the setting or version to change. Nothing was prepared on that resource.
 *
 * @example
 * // PostgreSQL with max_prepared_transactions = 0:
 * // XaUnsupportedError: PostgreSQL at 127.0.0.1:5433/test cannot prepare transactions: max_prepared_transactions = 0 …
 */
export class XaUnsupportedError extends TxError {
  override name = 'XaUnsupportedError'
  /** The server setting or property that is missing (`max_prepared_transactions`, `version`). */
  readonly setting: string
  /** The resource, as `<dialect>:<host>:<port>/<database>`. */
  readonly resource: string

  constructor(resource: string, setting: string, message: string) {
    super(message, { code: 'XA_UNSUPPORTED' })
    this.setting = setting
    this.resource = resource
  }
}
