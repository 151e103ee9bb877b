/**
 * DTM's two-phase message through `latchkey-tx serve` with raw HTTP, as DTM's SDKs drive it (`DoAndSubmit`):
 * `prepare` with the steps and the `query_prepared` URL, the producer's local transaction, then `submit`, or
 * `abort` on a business failure. A producer that never submits is settled by the server's check-back. Every step
 * is called with DTM's query parameters (`trans_type=msg`, `op=action`) until it succeeds.
 */
import { describe, expect, it } from 'vitest'
import { eventually } from './support/eventually.js'
import { uniqueGid, useServerFixture } from './support/server-fixture.js'
import { dtm } from './support/server-process.js'

const gid = uniqueGid

describe('latchkey-tx serve: DTM two-phase messages over raw HTTP', () => {
  const f = useServerFixture(['--retry-first-ms', '10', '--retry-max-ms', '50'])

  /** The body a DTM SDK sends to prepare and submit a message of two steps (TransOut, TransIn). */
  const body = (id: string, extra: Record<string, unknown> = {}) => ({
    gid: id,
    trans_type: 'msg',
    steps: [{ action: `${f.busi}/TransOut` }, { action: `${f.busi}/TransIn` }],
    payloads: ['{"amount":30}', '{"amount":30}'],
    query_prepared: `${f.busi}/QueryPrepared`,
    ...extra,
  })

  const statusOf = async (id: string) =>
    ((await dtm(f.server.base, `query?gid=${id}`)).body.transaction as { status: string } | undefined)?.status

  const delivered = (id: string) =>
    f.participant.calls
      .filter((c) => c.gid === id && !c.path.startsWith('/api/busi/QueryPrepared'))
      .map((c) => `${c.method} ${c.path} ${c.transType} ${c.branchId} ${c.op} ${c.body}`)

  it('prepare, then submit: each step is called once, in order, with DTM query parameters; no check-back', async () => {
    const id = gid('TestMsgNormal')
    expect(await dtm(f.server.base, 'prepare', body(id))).toEqual({ status: 200, body: { dtm_result: 'SUCCESS' } })
    expect(await statusOf(id)).toBe('prepared')
    // Nothing is delivered before the submit.
    expect(delivered(id)).toEqual([])
    expect((await dtm(f.server.base, 'submit', body(id))).status).toBe(200)
    await eventually(async () => (await statusOf(id)) === 'succeed')
    expect(delivered(id)).toEqual([
      'POST /api/busi/TransOut msg 01 action {"amount":30}',
      'POST /api/busi/TransIn msg 02 action {"amount":30}',
    ])
    expect(f.participant.callsTo('/api/busi/QueryPrepared', id)).toEqual([])
    // A repeated submit is answered SUCCESS and delivers nothing again.
    expect((await dtm(f.server.base, 'submit', body(id))).status).toBe(200)
    expect(delivered(id)).toHaveLength(2)
  })

  it('no submit (the producer died after its commit): past timeout_to_fail the check-back says committed, and it is delivered', async () => {
    const id = gid('TestMsgQueryPrepared')
    const started = Date.now()
    expect((await dtm(f.server.base, 'prepare', body(id, { timeout_to_fail: 1 }))).status).toBe(200)
    await eventually(async () => (await statusOf(id)) === 'succeed', 10_000)
    const asked = f.participant.callsTo('/api/busi/QueryPrepared', id)
    expect(asked.map((c) => `${c.method} ${c.transType} ${c.branchId} ${c.op}`)).toEqual(['GET msg 00 msg'])
    expect(Date.now() - started).toBeGreaterThanOrEqual(1_000)
    expect(delivered(id)).toHaveLength(2)
  })

  it('no submit, and the check-back says rolled back (409): nothing is delivered, and a late submit is refused', async () => {
    const id = gid('TestMsgRolledBack')
    f.participant.answer('/api/busi/QueryPreparedNo', { status: 409 })
    const prepared = await dtm(
      f.server.base,
      'prepare',
      body(id, { timeout_to_fail: 1, query_prepared: `${f.busi}/QueryPreparedNo` }),
    )
    expect(prepared.status).toBe(200)
    await eventually(async () => (await statusOf(id)) === 'failed', 10_000)
    expect(f.participant.callsTo('/api/busi/QueryPreparedNo', id)).toHaveLength(1)
    const late = await dtm(f.server.base, 'submit', body(id))
    expect(late.status).toBe(409)
    expect(String(late.body.message)).toMatch(/already decided to abort/)
    expect(delivered(id)).toEqual([])
  })

  it('a check-back that cannot answer yet (ONGOING, 503) is asked again until it answers', async () => {
    const id = gid('TestMsgQueryOngoing')
    const path = '/api/busi/QueryPreparedLater'
    f.participant.answer(path, { status: 425, body: '{"dtm_result":"ONGOING"}' })
    await dtm(
      f.server.base,
      'prepare',
      body(id, { timeout_to_fail: 1, query_prepared: `${f.busi}/QueryPreparedLater` }),
    )
    await eventually(() => f.participant.callsTo(path, id).length >= 2, 10_000)
    expect(await statusOf(id)).toBe('prepared')
    f.participant.answer(path, { status: 200 })
    await eventually(async () => (await statusOf(id)) === 'succeed', 10_000)
    expect(delivered(id)).toHaveLength(2)
  })

  it('abort (the local transaction failed): nothing is delivered, the check-back is never asked, submit is refused', async () => {
    const id = gid('TestMsgAbort')
    await dtm(f.server.base, 'prepare', body(id, { timeout_to_fail: 1 }))
    expect((await dtm(f.server.base, 'abort', { gid: id, trans_type: 'msg' })).status).toBe(200)
    await eventually(async () => (await statusOf(id)) === 'failed')
    expect((await dtm(f.server.base, 'submit', body(id))).status).toBe(409)
    expect(delivered(id)).toEqual([])
    expect(f.participant.callsTo('/api/busi/QueryPrepared', id)).toEqual([])
  })

  it('a step that answers FAILURE or 503 is retried until it succeeds (a message has no compensation)', async () => {
    const id = gid('TestMsgRetry')
    let calls = 0
    f.participant.answer('/api/busi/Flaky', { status: 409 })
    f.participant.effect('/api/busi/Flaky', () => {
      calls++
      if (calls === 3) f.participant.answer('/api/busi/Flaky', { status: 200 })
    })
    const b = body(id, { steps: [{ action: `${f.busi}/TransOut` }, { action: `${f.busi}/Flaky` }] })
    await dtm(f.server.base, 'prepare', b)
    expect((await dtm(f.server.base, 'submit', { ...b, wait_result: true })).status).toBe(200)
    expect(await statusOf(id)).toBe('succeed')
    expect(f.participant.callsTo('/api/busi/Flaky', id).length).toBeGreaterThanOrEqual(3)
    expect(f.participant.callsTo('/api/busi/TransOut', id)).toHaveLength(1)
  })

  it('submit without prepare (msg.Submit()) delivers at once; query shows DTM trans_type msg', async () => {
    const id = gid('TestMsgSubmitOnly')
    const { query_prepared: _, ...noCheckBack } = body(id)
    expect((await dtm(f.server.base, 'submit', { ...noCheckBack, wait_result: true })).status).toBe(200)
    const q = await dtm(f.server.base, `query?gid=${id}`)
    expect(q.body.transaction).toMatchObject({ gid: id, trans_type: 'msg', status: 'succeed' })
    expect(delivered(id)).toHaveLength(2)
  })

  it('refuses a prepare without query_prepared, and a gid that another transaction type uses', async () => {
    const { query_prepared: _, ...noCheckBack } = body(gid('TestMsgNoQuery'))
    const r = await dtm(f.server.base, 'prepare', noCheckBack)
    expect(r.status).toBe(400)
    expect(String(r.body.message)).toMatch(/query_prepared/)
    const id = gid('TestMsgGidTaken')
    expect((await dtm(f.server.base, 'prepare', { gid: id, trans_type: 'tcc' })).status).toBe(200)
    const taken = await dtm(f.server.base, 'prepare', body(id))
    expect(taken.status).toBe(409)
    expect(String(taken.body.message)).toMatch(/already used by a tcc/)
    await dtm(f.server.base, 'abort', { gid: id, trans_type: 'tcc' })
  })
})
