/**
 * `latchkey-tx serve` as a child process, driven with raw HTTP exactly as DTM's HTTP reference shows it
 * ("submit example2": gid TestSagaNormal, two steps TransOut / TransIn with payloads), the participant URLs
 * pointing at a local participant service that reads DTM's query parameters.
 */
import { describe, expect, it } from 'vitest'
import { eventually } from './support/eventually.js'
import { uniqueGid, useServerFixture } from './support/server-fixture.js'
import { dtm } from './support/server-process.js'

/** DTM's "submit example2" body, with its host replaced by the local participant and a unique gid. */
function dtmExample(busi: string, gid: string) {
  const text = `{
    "gid": "TestSagaNormal",
    "trans_type": "saga",
    "steps":[
        {
            "action": "http://localhost:8081/api/busi/TransOut",
            "compensate": "http://localhost:8081/api/busi/TransOutRevert"
        },
        {
            "action": "http://localhost:8081/api/busi/TransIn",
            "compensate": "http://localhost:8081/api/busi/TransInRevert"
        }
    ],
    "payloads":[
        "{\\"amount\\":30,\\"transInResult\\":\\"SUCCESS\\",\\"transOutResult\\":\\"SUCCESS\\"}",
        "{\\"amount\\":30,\\"transInResult\\":\\"SUCCESS\\",\\"transOutResult\\":\\"SUCCESS\\"}"
    ]
}`
  return text.replaceAll('http://localhost:8081/api/busi', busi).replace('"TestSagaNormal"', JSON.stringify(gid))
}

const gid = uniqueGid

describe('latchkey-tx serve: DTM saga over raw HTTP', () => {
  // Many attempts: a step retried past timeout_to_fail must still be retrying (not parked) when it passes.
  const f = useServerFixture(['--retry-first-ms', '10', '--retry-max-ms', '50', '--retry-attempts', '1000'])

  it('newGid answers a gid with dtm_result SUCCESS', async () => {
    const r = await dtm(f.server.base, 'newGid')
    expect(r.status).toBe(200)
    expect(r.body.dtm_result).toBe('SUCCESS')
    expect(typeof r.body.gid).toBe('string')
  })

  it("runs DTM's example saga: each action called once, with DTM's query parameters and the payload as body", async () => {
    const id = gid('TestSagaNormal')
    const r = await dtm(f.server.base, 'submit', dtmExample(f.busi, id))
    expect(r).toEqual({ status: 200, body: { dtm_result: 'SUCCESS' } })
    const q = await eventually(async () => {
      const q = await dtm(f.server.base, `query?gid=${id}`)
      return (q.body.transaction as { status: string }).status === 'succeed' && q
    })
    const out = f.participant.callsTo('/api/busi/TransOut', id)
    const into = f.participant.callsTo('/api/busi/TransIn', id)
    expect(out).toEqual([
      {
        method: 'POST',
        path: '/api/busi/TransOut',
        gid: id,
        transType: 'saga',
        branchId: '01',
        op: 'action',
        body: '{"amount":30,"transInResult":"SUCCESS","transOutResult":"SUCCESS"}',
      },
    ])
    expect(into.map((c) => [c.branchId, c.op])).toEqual([['02', 'action']])
    expect(f.participant.calls.filter((c) => c.gid === id && c.op === 'compensate')).toEqual([])
    const branches = q.body.branches as { branch_id: string; op: string; status: string }[]
    expect(branches.map((b) => `${b.branch_id}/${b.op}/${b.status}`)).toEqual([
      '01/compensate/prepared',
      '01/action/succeed',
      '02/compensate/prepared',
      '02/action/succeed',
    ])
  })

  it('a 409 on the second step compensates in reverse order (the failed step first), with DTM query parameters', async () => {
    const id = gid('TestSagaFail')
    f.participant.answer('/api/busi/TransInFail', { status: 409, body: '{"dtm_result":"FAILURE"}' })
    const body = dtmExample(f.busi, id).replace('/api/busi/TransIn"', '/api/busi/TransInFail"')
    expect((await dtm(f.server.base, 'submit', body)).status).toBe(200)
    await eventually(async () => {
      const q = await dtm(f.server.base, `query?gid=${id}`)
      return (q.body.transaction as { status: string }).status === 'failed'
    })
    const mine = f.participant.calls.filter((c) => c.gid === id)
    expect(mine.map((c) => `${c.path} ${c.branchId} ${c.op}`)).toEqual([
      '/api/busi/TransOut 01 action',
      '/api/busi/TransInFail 02 action',
      '/api/busi/TransInRevert 02 compensate',
      '/api/busi/TransOutRevert 01 compensate',
    ])
    expect(mine.every((c) => c.transType === 'saga' && c.method === 'POST')).toBe(true)
  })

  it('wait_result answers the outcome: SUCCESS, or 409 FAILURE when the saga failed', async () => {
    const good = JSON.parse(dtmExample(f.busi, gid('TestSagaWait'))) as Record<string, unknown>
    expect(await dtm(f.server.base, 'submit', { ...good, wait_result: true })).toEqual({
      status: 200,
      body: { dtm_result: 'SUCCESS' },
    })
    const bad = JSON.parse(dtmExample(f.busi, gid('TestSagaWaitFail')).replace('/TransIn"', '/TransInFail"'))
    const r = await dtm(f.server.base, 'submit', { ...bad, wait_result: true })
    expect(r.status).toBe(409)
    expect(r.body.dtm_result).toBe('FAILURE')
  })

  it('a repeated submit of the same gid answers SUCCESS and runs nothing again', async () => {
    const id = gid('TestSagaTwice')
    const body = dtmExample(f.busi, id)
    expect((await dtm(f.server.base, 'submit', body)).status).toBe(200)
    expect((await dtm(f.server.base, 'submit', body)).status).toBe(200)
    await eventually(async () => {
      const q = await dtm(f.server.base, `query?gid=${id}`)
      return (q.body.transaction as { status: string }).status === 'succeed'
    })
    expect(f.participant.callsTo('/api/busi/TransOut', id)).toHaveLength(1)
  })

  it("DTM's first SDKs' step format (each step's body in steps[].data) is accepted, and all lists the saga", async () => {
    const id = gid('TestSagaData')
    const r = await dtm(f.server.base, 'submit', {
      gid: id,
      trans_type: 'saga',
      steps: [{ data: '{"amount":5}', action: `${f.busi}/TransOut`, compensate: `${f.busi}/TransOutRevert` }],
      wait_result: true,
    })
    expect(r.status).toBe(200)
    expect(f.participant.callsTo('/api/busi/TransOut', id).map((c) => c.body)).toEqual(['{"amount":5}'])
    const all = await dtm(f.server.base, 'all')
    const listed = (all.body.transactions as { gid: string; status: string }[]).find((t) => t.gid === id)
    expect(listed).toMatchObject({ status: 'succeed', trans_type: 'saga' })
  })

  it('concurrent saga (custom_data orders): step 3 runs after steps 1 and 2', async () => {
    const id = gid('TestSagaConcurrent')
    const step = (name: string) => ({ action: `${f.busi}/${name}`, compensate: `${f.busi}/${name}Revert` })
    const r = await dtm(f.server.base, 'submit', {
      gid: id,
      trans_type: 'saga',
      steps: [step('A'), step('B'), step('C')],
      payloads: ['{}', '{}', '{}'],
      custom_data: JSON.stringify({ concurrent: true, orders: { 2: [0, 1] } }),
      wait_result: true,
    })
    expect(r.status).toBe(200)
    const order = f.participant.calls.filter((c) => c.gid === id).map((c) => c.path)
    expect(order.at(-1)).toBe('/api/busi/C')
    expect(order.sort()).toEqual(['/api/busi/A', '/api/busi/B', '/api/busi/C'])
  })

  it('timeout_to_fail: a step still retrying when it passes is not tried again; the saga compensates', async () => {
    const id = gid('TestSagaTimeout')
    // 503 with a body that is not FAILURE: "try again later" in DTM's protocol.
    f.participant.answer('/api/busi/Slow', { status: 503, body: 'busy' })
    const body = JSON.parse(dtmExample(f.busi, id).replace('/TransIn"', '/Slow"')) as Record<string, unknown>
    const r = await dtm(f.server.base, 'submit', { ...body, timeout_to_fail: 1, wait_result: true })
    expect(r.status).toBe(409)
    expect(String(r.body.message)).toMatch(/timeout_to_fail \(1 s\) passed/)
    const mine = f.participant.calls.filter((c) => c.gid === id && c.op === 'compensate').map((c) => c.path)
    expect(mine).toEqual(['/api/busi/TransInRevert', '/api/busi/TransOutRevert'])
    expect(f.participant.callsTo('/api/busi/Slow', id).length).toBeGreaterThan(1)
  })

  it('refuses what it does not run with a clear 400: workflow, a saga or msg without steps, bad JSON', async () => {
    const workflow = await dtm(f.server.base, 'submit', { gid: gid('w'), trans_type: 'workflow' })
    expect(workflow.status).toBe(400)
    expect(workflow.body.message).toMatch(/workflow.*not supported yet/)
    expect((await dtm(f.server.base, 'prepare', { gid: gid('p'), trans_type: 'saga', steps: [] })).status).toBe(400)
    const noSteps = await dtm(f.server.base, 'submit', { gid: gid('m'), trans_type: 'msg', steps: [] })
    expect(noSteps.status).toBe(400)
    expect(noSteps.body.message).toMatch(/msg needs at least one step/)
    const empty = await dtm(f.server.base, 'submit', { gid: gid('e'), trans_type: 'saga', steps: [] })
    expect(empty).toMatchObject({ status: 400, body: { dtm_result: 'FAILURE' } })
    expect((await dtm(f.server.base, 'submit', '{not json')).status).toBe(400)
    const badUrl = await dtm(f.server.base, 'submit', {
      gid: gid('u'),
      trans_type: 'saga',
      steps: [{ action: 'ftp://x' }],
    })
    expect(badUrl.body.message).toMatch(/steps\[0\]\.action/)
  })
})
