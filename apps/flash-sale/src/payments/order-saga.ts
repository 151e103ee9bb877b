/**
 * A sold order as a saga of latchkey-tx: `order` (record it as awaiting payment; undone by releasing its stock),
 * `pay` (the payment service's `/charge` over HTTP; undone by a refund), `confirm` (mark it paid and write the
 * order-created event to the outbox, one transaction). A declined charge (409) aborts the saga: the refund is a
 * null compensation (the barrier knows the charge never committed) and the release gives the stock back.
 */
import type { Locks } from 'latchkey'
import { type BranchFn, type Coordinator, type Saga, TxError } from 'latchkey-tx'
import { http } from 'latchkey-tx/http'
import type { Outbox } from 'latchkey-tx/outbox'
import type { OrderInput, OrderLedger } from './order-ledger.js'

/** The saga's name in the coordinator's log (recovery finds its definition by it). */
export const ORDER_SAGA = 'flash-sale-order'

/** The gid of the saga of order `orderId`: one transaction per order, whoever starts it. */
export function orderGid(orderId: string): string {
  return `order-${orderId}`
}

/** A local step whose database errors (a busy file, a stale fence) ask for another try, not an abort. */
function local<R>(what: string, fn: (input: OrderInput) => R | Promise<R>): BranchFn<OrderInput> {
  return async ({ input }) => {
    try {
      return await fn(input)
    } catch (error) {
      throw new TxError(`${what} of order ${input.orderId} failed: ${String(error)}`, { retryable: true, cause: error })
    }
  }
}

/** What the saga's steps work on. */
export interface OrderSagaParts {
  readonly ledger: OrderLedger
  /** Locks on the sellers' backend (namespace `flash-sale`): releases of lock and sharded sales take them. */
  readonly locks: Locks
  readonly outbox: Outbox
  /** Base URL of the payment service. */
  readonly paymentUrl: string
  /** Timeout of one call to the payment service. Default 3 000. */
  readonly callTimeoutMs?: number
}

/**
 * Registers the order saga with `tc`.
 *
 * @example
 * const saga = defineOrderSaga(tc, { ledger, locks, outbox, paymentUrl: 'http://127.0.0.1:4000' })
 * await saga.run(ledger.input(orderId, 2_500), { gid: orderGid(orderId) })
 */
export function defineOrderSaga(tc: Coordinator, parts: OrderSagaParts): Saga<OrderInput> {
  const charge = http(`${parts.paymentUrl}/charge`, { timeoutMs: parts.callTimeoutMs ?? 3_000 })
  return tc
    .saga<OrderInput>(ORDER_SAGA)
    .step('order', {
      action: local('recording', (input) => parts.ledger.open(input)),
      compensate: local('releasing', (input) => parts.ledger.release(input, parts.locks)),
    })
    .step('pay', { action: charge, compensate: charge })
    .step('confirm', { action: local('confirming', (input) => parts.ledger.confirm(input, parts.outbox)) })
}
