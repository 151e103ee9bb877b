/**
 * DTM's TCC through `latchkey-tx serve` with raw HTTP, as DTM's SDKs drive it: `prepare`, then for each branch
 * `registerBranch` (confirm and cancel URLs, data) followed by the application's own call of the try, then
 * `submit` (confirms) or `abort` (cancels); and `/metrics` counting what happened.
 */
import { describe, expect, it } from 'vitest'
import { eventually } from './support/eventually.js'
import { uniqueGid, useServerFixture } from './support/server-fixture.js'
import { dtm } from './support/server-process.js'

const gid = uniqueGid

describe('latchkey-tx serve: DTM TCC over raw HTTP', () => {
  const f = useServerFixture(['--retry-first-ms', '10', '--retry-max-ms', '50'])

  /** What a DTM SDK's `CallBranch` does: register the branch, then call its try with DTM's query parameters. */
  async function callBranch(id: string, branchId: string, name: string, amount: number): Promise<number> {
    const data = JSON.stringify({ amount })
    const reg = await dtm(f.server.base, 'registerBranch', {
      gid: id,
      trans_type: 'tcc',
      branch_id: branchId,
      data,
      confirm: `${f.busi}/${name}Confirm`,
      cancel: `${f.busi}/${name}Cancel`,
    })
    expect(reg).toEqual({ status: 200, body: { dtm_result: 'SUCCESS' } })
    const q = new URLSearchParams({ gid: id, trans_type: 'tcc', branch_id: branchId, op: 'try' })
    const r = await fetch(`${f.busi}/${name}Try?${q}`, { method: 'POST', body: data })
    await r.text()
    return r.status
  }

  const statusOf = async (id: string) =>
    ((await dtm(f.server.base, `query?gid=${id}`)).body.transaction as { status: string }).status

  it('prepare, two branches, submit: confirms every branch (the last registered first) with DTM query parameters', async () => {
    const id = gid('TestTccNormal')
    expect(await dtm(f.server.base, 'prepare', { gid: id, trans_type: 'tcc' })).toEqual({
      status: 200,
      body: { dtm_result: 'SUCCESS' },
    })
    expect(await statusOf(id)).toBe('prepared')
    expect(await callBranch(id, '01', 'TransOut', 30)).toBe(200)
    expect(await callBranch(id, '02', 'TransIn', 30)).toBe(200)
    expect((await dtm(f.server.base, 'submit', { gid: id, trans_type: 'tcc' })).status).toBe(200)
    await eventually(async () => (await statusOf(id)) === 'succeed')
    const phase2 = f.participant.calls.filter((c) => c.gid === id && c.op !== 'try')
    expect(phase2.map((c) => `${c.method} ${c.path} ${c.transType} ${c.branchId} ${c.op} ${c.body}`)).toEqual([
      'POST /api/busi/TransInConfirm tcc 02 confirm {"amount":30}',
      'POST /api/busi/TransOutConfirm tcc 01 confirm {"amount":30}',
    ])
    const q = await dtm(f.server.base, `query?gid=${id}`)
    const branches = q.body.branches as { branch_id: string; op: string; status: string }[]
    expect(branches.filter((b) => b.op === 'confirm').map((b) => `${b.branch_id} ${b.status}`)).toEqual([
      '01 succeed',
      '02 succeed',
    ])
  })

  it('a try that fails, then abort: cancels every registered branch, confirms none', async () => {
    const id = gid('TestTccRollback')
    f.participant.answer('/api/busi/TransInFailTry', { status: 409 })
    await dtm(f.server.base, 'prepare', { gid: id, trans_type: 'tcc' })
    expect(await callBranch(id, '01', 'TransOut', 30)).toBe(200)
    expect(await callBranch(id, '02', 'TransInFail', 30)).toBe(409)
    expect((await dtm(f.server.base, 'abort', { gid: id, trans_type: 'tcc' })).status).toBe(200)
    await eventually(async () => (await statusOf(id)) === 'failed')
    const phase2 = f.participant.calls.filter((c) => c.gid === id && c.op !== 'try')
    expect(phase2.map((c) => `${c.path} ${c.branchId} ${c.op}`)).toEqual([
      '/api/busi/TransInFailCancel 02 cancel',
      '/api/busi/TransOutCancel 01 cancel',
    ])
    // Decided: a late submit or registration is refused with DTM's 409 FAILURE.
    expect((await dtm(f.server.base, 'submit', { gid: id, trans_type: 'tcc' })).status).toBe(409)
    const late = await dtm(f.server.base, 'registerBranch', { gid: id, trans_type: 'tcc', branch_id: '03', data: '{}' })
    expect(late.status).toBe(409)
  })

  it('no submit within timeout_to_fail: the server cancels by itself, and the late submit gets 409', async () => {
    const id = gid('TestTccTimeout')
    await dtm(f.server.base, 'prepare', { gid: id, trans_type: 'tcc', timeout_to_fail: 1 })
    await callBranch(id, '01', 'TransOut', 5)
    await eventually(async () => (await statusOf(id)) === 'failed', 5_000)
    expect(f.participant.calls.filter((c) => c.gid === id && c.op === 'cancel').map((c) => c.branchId)).toEqual(['01'])
    expect((await dtm(f.server.base, 'submit', { gid: id, trans_type: 'tcc' })).status).toBe(409)
  })

  it('submit with wait_result answers once confirmed; a confirm answering 503 is retried until it succeeds', async () => {
    const id = gid('TestTccRetry')
    f.participant.answer('/api/busi/FlakyConfirm', { status: 503, body: 'unavailable' })
    await dtm(f.server.base, 'prepare', { gid: id, trans_type: 'tcc' })
    await callBranch(id, '01', 'Flaky', 1)
    const submitted = dtm(f.server.base, 'submit', { gid: id, trans_type: 'tcc', wait_result: true })
    await eventually(() => f.participant.callsTo('/api/busi/FlakyConfirm', id).length >= 2)
    f.participant.answer('/api/busi/FlakyConfirm', { status: 200 })
    expect(await submitted).toEqual({ status: 200, body: { dtm_result: 'SUCCESS' } })
  })

  it('/metrics counts transactions by kind and status, branch calls by op and outcome, and retries', async () => {
    const text = await (await fetch(`${f.server.base}/metrics`)).text()
    const value = (line: string) => Number(new RegExp(`^${escapeRegExp(line)} (\\d+)`, 'm').exec(text)?.[1] ?? 'NaN')
    expect(value('latchkey_tx_transactions_total{kind="tcc",status="succeeded"}')).toBe(2)
    expect(value('latchkey_tx_transactions_total{kind="tcc",status="failed"}')).toBe(2)
    expect(value('latchkey_tx_branch_calls_total{op="confirm",outcome="succeeded"}')).toBe(2)
    expect(value('latchkey_tx_branch_calls_total{op="cancel",outcome="succeeded"}')).toBe(2)
    expect(value('latchkey_tx_branch_calls_total{op="confirm",outcome="retry"}')).toBeGreaterThanOrEqual(2)
    expect(value('latchkey_tx_retries_total{op="confirm"}')).toBeGreaterThanOrEqual(2)
    // The registration and decision records are bookkeeping: no saga is counted.
    expect(text).not.toMatch(/latchkey_tx_transactions_total\{kind="saga"/)
    const health = await fetch(`${f.server.base}/healthz`)
    expect(health.status).toBe(200)
  })
})

function escapeRegExp(text: string): string {
  return text.replace(/[{}"=.*+?^$()|[\]\\]/g, '\\$&')
}
