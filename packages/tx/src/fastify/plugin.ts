/**
 * The fastify participant plugin: mounts one POST route per branch, runs its handler inside the barrier in the
 * participant's own database transaction, and answers with DTM's result codes.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import { barrier, ensureBarrierTable } from '../barrier/index.js'
import { isRetryable } from '../branch.js'
import { checkPrefix } from '../store/schema.js'
import { BadBranchCall, BRANCH_OPS, type BranchCall, readBranchCall } from './branch-call.js'
import { isBranchFailure, isBranchOngoing } from './branch-errors.js'
import { type Isolation, transactionRunner } from './local-tx.js'

/**
 * One branch operation's business code: `trx` is the open local transaction (a pg client, a mysql2/promise
 * connection or the better-sqlite3 database), already past the barrier. Its result is sent back as JSON.
 */
export type BranchHandler<I = unknown, Trx = unknown> = (
  trx: Trx,
  call: BranchCall<I> & { readonly request: FastifyRequest },
) => unknown

/**
 * The handlers of one branch route, by op. An op without a handler is a no-op that still goes through the
 * barrier (a TCC participant with nothing to confirm; a late try after that no-op cancel is still refused).
 */
export interface BranchHandlers<I = unknown, Trx = unknown> {
  // Method signatures (not properties) so that handlers typed for a specific input fit `routes`.
  action?(trx: Trx, call: BranchCall<I> & { readonly request: FastifyRequest }): unknown
  compensate?(trx: Trx, call: BranchCall<I> & { readonly request: FastifyRequest }): unknown
  try?(trx: Trx, call: BranchCall<I> & { readonly request: FastifyRequest }): unknown
  confirm?(trx: Trx, call: BranchCall<I> & { readonly request: FastifyRequest }): unknown
  cancel?(trx: Trx, call: BranchCall<I> & { readonly request: FastifyRequest }): unknown
}

/** Options of {@link txParticipant}. */
export interface TxParticipantOptions {
  /** The participant's own database: a pg Pool, a mysql2/promise pool or a better-sqlite3 database. */
  db: unknown
  /** Branch routes by path (under the plugin's prefix), e.g. `{ '/out': { try, confirm, cancel } }`. */
  routes: Record<string, BranchHandlers>
  /** The barrier table. Default `latchkey_tx_barrier`. */
  barrierTable?: string
  /** Create the barrier table when the plugin starts. Default true. */
  createTable?: boolean
  /** Isolation of the local transactions (PostgreSQL, MariaDB/MySQL). Default: the database's. */
  isolation?: Isolation
}

function checkRoutes(routes: unknown): [string, BranchHandlers][] {
  if (typeof routes !== 'object' || routes === null || Object.keys(routes).length === 0) {
    throw new TypeError(
      `latchkey-tx/fastify: routes must be an object { '/path': { action, compensate, ... } }, received ${String(routes)}`,
    )
  }
  return Object.entries(routes).map(([path, handlers]) => {
    if (!path.startsWith('/'))
      throw new RangeError(`latchkey-tx/fastify: route ${JSON.stringify(path)} must start with /`)
    if (typeof handlers !== 'object' || handlers === null) {
      throw new TypeError(`latchkey-tx/fastify: routes[${JSON.stringify(path)}] must be an object of handlers`)
    }
    for (const [op, fn] of Object.entries(handlers)) {
      if (!BRANCH_OPS.includes(op as BranchCall['op'])) {
        throw new RangeError(
          `latchkey-tx/fastify: routes[${JSON.stringify(path)}] has op ${JSON.stringify(op)}; ops are ${BRANCH_OPS.join(', ')}`,
        )
      }
      if (typeof fn !== 'function') {
        throw new TypeError(
          `latchkey-tx/fastify: routes[${JSON.stringify(path)}].${op} must be a function, received ${typeof fn}`,
        )
      }
    }
    return [path, handlers as BranchHandlers]
  })
}

/**
 * A fastify plugin for a participant service. Each route accepts latchkey-tx's `http()` calls (`{ gid, branch,
 * op, input }` as the JSON body) and DTM's (`?gid=…&trans_type=…&branch_id=…&op=…`, the payload as the body).
 * Answers: 200 with the handler's result as JSON (or `{ dtm_result: 'SUCCESS', barrier }` when the barrier
 * skipped the call: duplicate, null compensation, hanging try); 409 `{ dtm_result: 'FAILURE' }` when the
 * handler threw a {@link BranchFailure}; 425 `{ dtm_result: 'ONGOING' }` for a {@link BranchOngoing}; 400 for a
 * request that is not a branch call; 500 otherwise (also a barrier conflict: the coordinator calls again).
 * Every answer but 200 rolls the local transaction back, barrier rows included.
 *
 * @example
 * const move = (sign) => async (c, { input }) => {
 *   await c.query('UPDATE acct SET bal = bal + $1 WHERE id = 1', [sign * input.amount])
 * }
 * app.register(txParticipant, { db: pool, routes: { '/out': { action: move(-1), compensate: move(1) } } })
 */
export async function txParticipant(app: FastifyInstance, options: TxParticipantOptions): Promise<void> {
  if (typeof options !== 'object' || options === null) {
    throw new TypeError(`latchkey-tx/fastify: options must be an object { db, routes }, received ${String(options)}`)
  }
  const routes = checkRoutes(options.routes)
  const table = options.barrierTable === undefined ? undefined : checkPrefix(options.barrierTable)
  const inTransaction = transactionRunner(options.db, options.isolation)
  if (options.createTable ?? true) await ensureBarrierTable(options.db, table === undefined ? {} : { table })
  for (const [path, handlers] of routes) {
    app.post(path, async (request, reply) => answer(request, reply, handlers))
  }

  async function answer(request: FastifyRequest, reply: FastifyReply, handlers: BranchHandlers): Promise<unknown> {
    let call: BranchCall
    try {
      call = readBranchCall(request.query, request.body)
    } catch (error) {
      if (!(error instanceof BadBranchCall)) throw error
      return reply.code(400).send({ message: error.message })
    }
    const handler = handlers[call.op]?.bind(handlers)
    const key = { gid: call.gid, branch: call.branch, op: call.op, ...(table === undefined ? {} : { table }) }
    try {
      const outcome = await inTransaction((trx) =>
        barrier(trx, key, async (t) => {
          const value = handler === undefined ? undefined : await handler(t, { ...call, request })
          // Serialised before the commit: a result that is not JSON (a cycle, a BigInt) rolls the effect back.
          return JSON.stringify(value === undefined ? { dtm_result: 'SUCCESS' } : value)
        }),
      )
      if (outcome.status !== 'applied') return reply.send({ dtm_result: 'SUCCESS', barrier: outcome.status })
      return reply.type('application/json').send(outcome.result)
    } catch (error) {
      const message = error instanceof Error ? error.message : String(error)
      if (isBranchFailure(error)) return reply.code(409).send({ dtm_result: 'FAILURE', message })
      if (isBranchOngoing(error)) return reply.code(425).send({ dtm_result: 'ONGOING', message })
      request.log.error({ err: error, gid: call.gid, branch: call.branch, op: call.op }, 'branch failed')
      return reply.code(isRetryable(error) ? 503 : 500).send({ message })
    }
  }
}
