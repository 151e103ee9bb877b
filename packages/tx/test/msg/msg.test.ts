/**
 * Transactional messages in one process, on each producer database: prepare → local transaction with its
 * barrier row → submit → branches; a failing local transaction settles the message as rolled back; the
 * check-back against the barrier table; bad arguments.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { type Coordinator, createCoordinator, queryPrepared, TxError } from '../../src/index.js'
import { FAST_RETRY } from '../support/coordinators.js'
import { DIALECTS, tempDir } from '../support/databases.js'
import { eventually } from '../support/eventually.js'
import { createOrders, openProducerDb, type ProducerDb } from './producer-db.js'

describe.each(DIALECTS)('transactional message (%s producer)', (dialect) => {
  const tmp = tempDir()
  let p: ProducerDb
  let tc: Coordinator
  const calls: string[] = []

  beforeAll(async () => {
    p = openProducerDb(dialect)
    await createOrders(p)
    tc = createCoordinator({ store: `sqlite:${tmp.dir}/tx.db`, recover: false, retry: FAST_RETRY })
  })
  afterAll(async () => {
    await tc?.close()
    await p?.drop()
    tmp.remove()
  })

  const define = (name: string) =>
    tc
      .msg<{ orderId: string }>(name, { barrierTable: p.barrierTable })
      .add(({ gid, input }) => void calls.push(`${name} ${gid} 01 ${input.orderId}`))
      .add(({ gid }) => void calls.push(`${name} ${gid} 02`))

  it('commits the local writes with the barrier row, submits, then calls every branch once in order', async () => {
    const msg = define('created')
    const gid = `${p.prefix}ok`
    const r = await msg.doAndSubmit(
      p.db,
      async (trx) => {
        await p.insertOrder(trx, gid)
        return 'order-1'
      },
      { gid, input: { orderId: 'o1' }, wait: true },
    )
    expect(r).toMatchObject({ gid, status: 'succeeded', local: 'order-1' })
    expect(calls.filter((c) => c.includes(gid))).toEqual([`created ${gid} 01 o1`, `created ${gid} 02`])
    expect(await p.orders(gid)).toBe(1)
    expect(await p.barrierReason(gid)).toBe('msg')
    const tx = await tc.get(gid)
    expect(tx?.kind).toBe('msg')
    expect(tx?.history.map((h) => h.type)).toEqual([
      'created',
      'submitted',
      'branch-start',
      'branch-succeeded',
      'branch-start',
      'branch-succeeded',
      'succeeded',
    ])
    expect(await queryPrepared(p.other, gid, { table: p.barrierTable })).toBe('committed')
    expect(() => msg.add(() => 1)).toThrow(/before the first/)
  })

  it('without wait, resolves once submitted; the branches follow', async () => {
    const msg = tc.msg(`later-${dialect}`, { barrierTable: p.barrierTable }).add(() => 'sent')
    const r = await msg.doAndSubmit(p.db, (trx) => p.insertOrder(trx, `${p.prefix}later`), { gid: `${p.prefix}later` })
    expect(r.status).toBe('submitted')
    await eventually(async () => (await tc.get(r.gid))?.status === 'succeeded')
  })

  it('a failing local transaction rolls back (barrier row included), the message fails, no branch runs', async () => {
    const msg = define('fails')
    const gid = `${p.prefix}fail`
    const boom = new Error('out of stock')
    await expect(
      msg.doAndSubmit(
        p.db,
        async (trx) => {
          await p.insertOrder(trx, gid)
          throw boom
        },
        { gid, input: { orderId: 'o2' } },
      ),
    ).rejects.toBe(boom)
    expect(calls.some((c) => c.includes(gid))).toBe(false)
    expect(await p.orders(gid)).toBe(0)
    // The check-back ran in process: its rollback row forbids any later commit of this message.
    expect(await p.barrierReason(gid)).toBe('rollback')
    const tx = await tc.get(gid)
    expect(tx?.status).toBe('failed')
    expect(tx?.branches.find((b) => b.id === 'local')).toMatchObject({ op: 'check-back', status: 'succeeded' })
  })

  it('a check-back that came first wins: the late local transaction is refused and never commits', async () => {
    const msg = define('late')
    const gid = `${p.prefix}late`
    expect(await queryPrepared(p.other, gid, { table: p.barrierTable })).toBe('rolled-back')
    let ran = false
    const err = await msg
      .doAndSubmit(
        p.db,
        async (trx) => {
          ran = true
          await p.insertOrder(trx, gid)
        },
        { gid, input: { orderId: 'o3' } },
      )
      .catch((e: unknown) => e)
    expect(err).toBeInstanceOf(TxError)
    expect((err as TxError).code).toBe('MSG_ROLLED_BACK')
    expect(ran).toBe(false)
    expect(await p.orders(gid)).toBe(0)
    expect((await tc.get(gid))?.status).toBe('failed')
  })

  it('refuses bad arguments before any I/O', async () => {
    const msg = define('bad')
    expect(() => tc.msg('x y')).toThrow(RangeError)
    expect(() => tc.msg('cb', { checkBack: 'ftp://x' })).toThrow(RangeError)
    expect(() => tc.msg('cb2', { checkBack: { query: 1 } })).toThrow(TypeError)
    expect(() => tc.msg('cb3', { barrierTable: 'x;drop' })).toThrow(RangeError)
    await expect(msg.doAndSubmit({}, () => 1)).rejects.toThrow(TypeError)
    await expect(msg.doAndSubmit(p.db, 'x' as never)).rejects.toThrow(TypeError)
    await expect(tc.msg('empty').doAndSubmit(p.db, () => 1)).rejects.toThrow(/no branches/)
    await expect(msg.doAndSubmit(p.db, () => 1, { gid: 'a b' })).rejects.toThrow(RangeError)
    // The same gid twice at once: the second is refused before it could take the first one's local transaction.
    const gid = `${p.prefix}twice`
    const first = msg.doAndSubmit(p.db, (trx) => p.insertOrder(trx, gid), { gid, input: { orderId: 't' } })
    await expect(msg.doAndSubmit(p.db, () => 1, { gid })).rejects.toMatchObject({ code: 'DUPLICATE_GID' })
    expect((await first).status).toBe('submitted')
    expect(await p.orders(gid)).toBe(1)
  })
})
