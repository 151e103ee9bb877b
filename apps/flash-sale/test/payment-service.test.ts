import { randomUUID } from 'node:crypto'
import { join } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { seededBalance, UNIT_PRICE } from '../src/payments/accounts.js'
import { dropPaymentTables } from '../src/payments/payment-db.js'
import { startPaymentService } from '../src/payments/payment-service.js'
import { ADMIN_TOKEN, MYSQL_URL, POSTGRES_URL, tempDir } from './support.js'

const ACCOUNTS = 50
const poor = Array.from({ length: ACCOUNTS }, (_, i) => i).find(
  (i) => seededBalance(i, { accounts: ACCOUNTS }) < UNIT_PRICE,
)
const rich = Array.from({ length: ACCOUNTS }, (_, i) => i).find(
  (i) => seededBalance(i, { accounts: ACCOUNTS }) >= UNIT_PRICE,
)

describe('the payment service on each database (the saga step /charge through latchkey-tx/fastify)', () => {
  const dir = tempDir()
  afterAll(() => dir.remove())

  it.each([
    ['sqlite', `sqlite:${join(dir.path, 'payments.db')}`],
    ['postgres', POSTGRES_URL],
    ['mysql', MYSQL_URL],
  ])(
    '%s: charge once, a repeat is a duplicate, a poor account is declined (409), a refund gives it back',
    async (_, dbUrl) => {
      const tablePrefix = `fs_pay_t${randomUUID().slice(0, 8)}_`
      const service = await startPaymentService({
        dbUrl,
        tablePrefix,
        seed: { accounts: ACCOUNTS },
        adminToken: ADMIN_TOKEN,
      })
      try {
        const call = async (op: string, user: number | undefined, orderId: string) => {
          const input = { orderId, saleId: 's1', userId: `u${user}`, amount: UNIT_PRICE }
          const response = await fetch(`${service.url}/charge`, {
            method: 'POST',
            headers: { 'content-type': 'application/json' },
            body: JSON.stringify({ gid: `order-${orderId}`, branch: 'pay', op, input }),
          })
          return { status: response.status, body: (await response.json()) as Record<string, unknown> }
        }
        expect(await call('action', rich, 'o1')).toEqual({ status: 200, body: { charged: UNIT_PRICE } })
        expect((await call('action', rich, 'o1')).body).toMatchObject({ barrier: 'duplicate' })
        expect((await call('action', poor, 'o2')).status).toBe(409)
        // The declined charge committed nothing: its refund is a null compensation.
        expect((await call('compensate', poor, 'o2')).body).toMatchObject({ barrier: 'null-compensation' })
        expect(await call('action', rich, 'o3')).toMatchObject({ status: 200 })
        expect(await call('compensate', rich, 'o3')).toEqual({ status: 200, body: { refunded: UNIT_PRICE } })
        const audit = await fetch(`${service.url}/audit`, { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } })
        const body = (await audit.json()) as {
          initialTotal: number
          balanceTotal: number
          accountsOff: number
          charges: unknown[]
        }
        expect(body.initialTotal - body.balanceTotal).toBe(UNIT_PRICE)
        expect(body.accountsOff).toBe(0)
        expect(body.charges).toHaveLength(2)
        expect((await fetch(`${service.url}/audit`)).status).toBe(401)
      } finally {
        await dropPaymentTables(service.db)
        await service.close()
      }
    },
  )
})
