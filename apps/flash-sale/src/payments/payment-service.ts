/**
 * The `payment` service: a separate process with its own database (accounts with balances). Its one branch
 * route, `POST /charge`, is a saga step of latchkey-tx: `action` debits the buyer's account and records the
 * charge, `compensate` refunds it; both run inside the sub-transaction barrier (`latchkey-tx/fastify`), so a
 * repeated call is applied once, a refund whose charge never ran does nothing, and a charge arriving after its
 * refund is refused. `GET /audit` (admin token) serves what the payment invariants need.
 */
import Fastify, { type FastifyInstance } from 'fastify'
import { BranchFailure, type BranchHandlers, txParticipant } from 'latchkey-tx/fastify'
import { adminGuard, checkAdminToken } from '../server/admin-auth.js'
import type { SeedOptions } from './accounts.js'
import { openPaymentDb, type PaymentDb, paymentAudit, seedAccounts } from './payment-db.js'
import { type Sql, sqlOn } from './sql-handle.js'

/** What a charge (and its refund) is asked to move: the saga's input. */
export interface PayInput {
  readonly orderId: string
  readonly saleId: string
  readonly userId: string
  /** Cents. */
  readonly amount: number
}

/** Options of {@link startPaymentService}. */
export interface PaymentServiceOptions {
  /** `sqlite:PATH` (default `sqlite:./payments.db`), `postgres://…` or `mysql://…`. */
  readonly dbUrl?: string
  /** Table prefix. Default `fs_pay_`. */
  readonly tablePrefix?: string
  /** Accounts to create at start (existing ones are kept). */
  readonly seed?: SeedOptions
  readonly host?: string
  /** Default 0 (a free port). */
  readonly port?: number
  /** Bearer token of `GET /audit`. Default none: the audit is refused. */
  readonly adminToken?: string
}

/** A running payment service. */
export interface RunningPaymentService {
  readonly url: string
  readonly db: PaymentDb
  close(): Promise<void>
}

function chargeHandlers(db: PaymentDb): BranchHandlers<PayInput> {
  const p = db.prefix
  const forUpdate = db.dialect === 'sqlite' ? '' : ' FOR UPDATE'
  const on = (trx: unknown): Sql => sqlOn(db.dialect, trx)
  return {
    async action(trx, { gid, input }) {
      const sql = on(trx)
      const [account] = await sql.all<{ balance: number | string }>(
        `SELECT balance FROM ${p}accounts WHERE user_id = ?${forUpdate}`,
        [input.userId],
      )
      // A business refusal (409): the saga aborts and releases the stock.
      if (account === undefined) throw new BranchFailure(`no account ${input.userId}`)
      if (Number(account.balance) < input.amount) {
        throw new BranchFailure(`insufficient balance: ${input.userId} has ${account.balance}, needs ${input.amount}`)
      }
      await sql.run(`UPDATE ${p}accounts SET balance = balance - ? WHERE user_id = ?`, [input.amount, input.userId])
      await sql.run(
        `INSERT INTO ${p}charges (order_id, sale_id, user_id, amount, status, gid) VALUES (?, ?, ?, ?, 'charged', ?)`,
        [input.orderId, input.saleId, input.userId, input.amount, gid],
      )
      return { charged: input.amount }
    },
    async compensate(trx, { input }) {
      const sql = on(trx)
      // Conditional: only a charge still standing is refunded (the barrier already makes the call itself once).
      const refunded = await sql.run(
        `UPDATE ${p}charges SET status = 'refunded' WHERE order_id = ? AND status = 'charged'`,
        [input.orderId],
      )
      if (refunded === 1) {
        await sql.run(`UPDATE ${p}accounts SET balance = balance + ? WHERE user_id = ?`, [input.amount, input.userId])
      }
      return { refunded: refunded === 1 ? input.amount : 0 }
    },
  }
}

/**
 * Opens the payment database, seeds the accounts and serves `POST /charge` and `GET /audit`.
 *
 * @example
 * const pay = await startPaymentService({ dbUrl: 'sqlite:./payments.db', seed: { accounts: 10_000 } })
 * // a saga step: { action: http(`${pay.url}/charge`), compensate: http(`${pay.url}/charge`) }
 */
export async function startPaymentService(options: PaymentServiceOptions = {}): Promise<RunningPaymentService> {
  checkAdminToken(options.adminToken)
  const db = await openPaymentDb(options.dbUrl ?? 'sqlite:./payments.db', options.tablePrefix)
  let app: FastifyInstance | undefined
  try {
    if (options.seed !== undefined) await seedAccounts(db, options.seed)
    app = Fastify({ logger: false })
    await app.register(txParticipant, {
      db: db.handle,
      barrierTable: `${db.prefix}barrier`,
      routes: { '/charge': chargeHandlers(db) },
    })
    app.get('/audit', { onRequest: adminGuard(options.adminToken) }, async () => paymentAudit(db))
    app.get('/healthz', async () => ({ ok: true, db: db.dialect }))
    const url = await app.listen({ host: options.host ?? '127.0.0.1', port: options.port ?? 0 })
    const running = app
    return {
      url,
      db,
      close: async () => {
        await running.close()
        await db.close()
      },
    }
  } catch (error) {
    await app?.close()
    await db.close()
    throw error
  }
}
