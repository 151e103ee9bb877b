/**
 * outbox.add writes its row in the caller's own transaction on PostgreSQL, MariaDB and SQLite: it commits with
 * the business write and rolls back with it. Bad input fails before any I/O.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createOutbox, type Outbox } from '../../src/outbox/index.js'
import { DIALECTS } from '../support/databases.js'
import { type BusinessDb, openBusinessDb } from './business-db.js'

describe.each(DIALECTS)('outbox.add in the business transaction (%s)', (dialect) => {
  let db: BusinessDb
  let outbox: Outbox

  beforeAll(async () => {
    db = openBusinessDb(dialect)
    outbox = createOutbox({ store: db.store })
    await outbox.ready()
    await db.sql(`CREATE TABLE ${db.prefix}orders (id VARCHAR(64) PRIMARY KEY)`)
  })
  afterAll(async () => {
    await outbox.close()
    await db.drop(['orders', 'outbox'])
  })

  /** The order insert and the outbox row in one transaction, which fails at the end when `fail` is set. */
  const placeOrder = (orderId: string, fail: boolean) =>
    db.tx((trx) => {
      const message = { topic: 'order.created', key: orderId, id: `m-${orderId}`, payload: { orderId } }
      const insert = `INSERT INTO ${db.prefix}orders (id) VALUES (?)`
      if (dialect === 'sqlite') {
        const added = outbox.add(trx, message) // written before it returns, inside db.transaction
        db.inTx(trx, insert, [orderId])
        if (fail) throw new Error('payment declined')
        return added
      }
      return (async () => {
        const id = await outbox.add(trx, message)
        await db.inTx(trx, insert, [orderId])
        if (fail) throw new Error('payment declined')
        return id
      })()
    })

  const rowsOf = async (orderId: string) => ({
    orders: (await db.sql(`SELECT id FROM ${db.prefix}orders WHERE id = ?`, [orderId])).length,
    outbox: await db.sql(
      `SELECT message_id, topic, msg_key, status, payload FROM ${db.prefix}outbox WHERE msg_key = ?`,
      [orderId],
    ),
  })

  it('commits the outbox row with the business write', async () => {
    await expect(placeOrder('o-1', false)).resolves.toBe('m-o-1')
    const { orders, outbox: rows } = await rowsOf('o-1')
    expect(orders).toBe(1)
    expect(rows).toHaveLength(1)
    expect(rows[0]).toMatchObject({ message_id: 'm-o-1', topic: 'order.created', msg_key: 'o-1', status: 'pending' })
    expect(JSON.parse(String(rows[0]?.payload))).toEqual({ orderId: 'o-1' })
  })

  it('rolls the outbox row back with the business write', async () => {
    await expect(placeOrder('o-2', true)).rejects.toThrow('payment declined')
    expect(await rowsOf('o-2')).toEqual({ orders: 0, outbox: [] })
  })

  it('rejects a message id that is already in the outbox, failing the business transaction', async () => {
    await expect(placeOrder('o-1', false)).rejects.toThrow()
    expect((await rowsOf('o-1')).outbox).toHaveLength(1)
  })
})

describe('outbox.add input checks (no I/O)', () => {
  const outbox = createOutbox({ store: 'postgres://postgres@127.0.0.1:1/none' })
  const client = { query: async () => ({ rowCount: 1 }), processID: 1, getTransactionStatus: () => 'T' }

  it('names the bad part of a message', () => {
    expect(() => outbox.add(client, { topic: '', key: 'k', payload: 1 })).toThrow(/message.topic/)
    expect(() => outbox.add(client, { topic: 't', key: 'k', payload: undefined })).toThrow(/message.payload/)
    expect(() => outbox.add(client, { topic: 't', key: 'k', payload: 1, headers: { a: 1 as never } })).toThrow(
      /message.headers.a/,
    )
  })

  it('refuses a pool, a client outside a transaction, and another database kind', () => {
    const msg = { topic: 't', key: 'k', payload: 1 }
    expect(() => outbox.add({ getConnection() {}, query() {} }, msg)).toThrow(/received a pool/)
    expect(() => outbox.add({ ...client, getTransactionStatus: () => 'I' }, msg)).toThrow(/run BEGIN first/)
    const sqlite = { prepare() {}, transaction() {}, inTransaction: true }
    expect(() => outbox.add(sqlite, msg)).toThrow(/sqlite transaction but its store is postgres/)
  })

  it('checks the options', () => {
    expect(() => createOutbox({ store: 'redis://x' })).toThrow(RangeError)
    expect(() => createOutbox({ store: '' })).toThrow(/options.store/)
    expect(() => createOutbox({ store: 'sqlite:x.db', partitions: 0 })).toThrow(/partitions/)
    expect(() => createOutbox({ store: 'sqlite:x.db', tablePrefix: 'a;drop' })).toThrow(/tablePrefix/)
    expect(() => outbox.relay({ publisher: {} as never })).toThrow(/publisher/)
  })
})
