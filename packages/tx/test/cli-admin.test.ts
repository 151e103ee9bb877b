/**
 * The admin CLI as child processes on the store of a running `latchkey-tx serve`: `list` (table and --json),
 * `show` (the branch timeline), `retry` of a parked compensation, `abort` of a parked forward phase and of a
 * prepared TCC; and `/metrics` counting the parked transactions.
 */
import { describe, expect, it } from 'vitest'
import { eventually } from './support/eventually.js'
import { uniqueGid, useServerFixture } from './support/server-fixture.js'
import { dtm, runCli } from './support/server-process.js'

const gid = uniqueGid

describe('latchkey-tx list | show | retry | abort', () => {
  const f = useServerFixture(['--retry-first-ms', '5', '--retry-max-ms', '10', '--retry-attempts', '2'])
  const cli = (...args: string[]) => runCli([...args, '--store', f.store])
  const saga = (id: string, a: string, b: string) => ({
    gid: id,
    trans_type: 'saga',
    steps: [
      { action: `${f.busi}/${a}`, compensate: `${f.busi}/${a}Revert` },
      { action: `${f.busi}/${b}`, compensate: `${f.busi}/${b}Revert` },
    ],
    payloads: ['{"amount":1}', '{"amount":1}'],
  })
  // Polled through the server (a CLI process per poll would be slow); the CLI's own output is checked below.
  const statusOf = async (id: string) =>
    ((await dtm(f.server.base, `query?gid=${id}`)).body.transaction as { latchkey_status: string }).latchkey_status

  it('a compensation that keeps failing parks; list and show say so; retry after the fix finishes it', async () => {
    const id = gid('parked-comp')
    f.participant.answer('/api/busi/Decline', { status: 409 })
    f.participant.answer('/api/busi/PayRevert', { status: 500 })
    expect((await dtm(f.server.base, 'submit', saga(id, 'Pay', 'Decline'))).status).toBe(200)
    await eventually(async () => (await statusOf(id)) === 'parked', 15_000)

    const listed = await cli('list', '--json')
    expect(listed.code).toBe(0)
    const rows = JSON.parse(listed.stdout) as { gid: string; status: string; parkedFrom: string }[]
    expect(rows.find((r) => r.gid === id)).toMatchObject({ status: 'parked', parkedFrom: 'aborting' })
    const table = await cli('list', '--status', 'parked')
    expect(table.stdout.split('\n')[0]).toMatch(/^GID\s+KIND\s+NAME\s+STATUS\s+UPDATED\s+ERROR$/)
    expect(table.stdout).toMatch(new RegExp(`${id}\\s+saga\\s+dtm-saga-2\\s+parked \\(from aborting\\)`))

    const shown = await cli('show', id)
    expect(shown.code).toBe(0)
    expect(shown.stdout).toMatch(/^status:\s+parked \(parked from aborting\)$/m)
    const timeline = shown.stdout.slice(shown.stdout.indexOf('timeline'))
    const events = [...timeline.matchAll(/^\+\d+\s+(\S+)\s+(\S*)/gm)].map((m) => `${m[1]} ${m[2]}`)
    expect(events).toEqual([
      'created -',
      'branch-start 01/action',
      'branch-succeeded 01/action',
      'branch-start 02/action',
      'aborting -',
      'branch-start 02/compensate',
      'branch-succeeded 02/compensate',
      'branch-start 01/compensate',
      'branch-retry 01/compensate',
      'branch-start 01/compensate',
      'parked 01/compensate',
    ])

    f.participant.answer('/api/busi/PayRevert', { status: 200 })
    const retried = await cli('retry', id, '--json')
    expect(retried.code).toBe(0)
    expect(JSON.parse(retried.stdout)).toMatchObject({ gid: id, status: 'failed' })
    expect(f.participant.callsTo('/api/busi/PayRevert', id).at(-1)).toMatchObject({ op: 'compensate', branchId: '01' })
    const metrics = await (await fetch(`${f.server.base}/metrics`)).text()
    expect(metrics).toMatch(/^latchkey_tx_parked_total\{kind="saga"\} 1$/m)
  })

  it('abort of a forward phase parked on a failing action compensates what was done', async () => {
    const id = gid('parked-fwd')
    // A body without FAILURE: DTM reads FAILURE in a body as a failure whatever the status.
    f.participant.answer('/api/busi/Busy', { status: 503, body: 'busy' })
    await dtm(f.server.base, 'submit', saga(id, 'Reserve', 'Busy'))
    await eventually(async () => (await statusOf(id)) === 'parked', 15_000)
    const aborted = await cli('abort', id)
    expect(aborted.code).toBe(0)
    expect(aborted.stdout.trim()).toMatch(new RegExp(`^${id}: failed`))
    const undo = f.participant.calls.filter((c) => c.gid === id && c.op === 'compensate').map((c) => c.path)
    expect(undo).toEqual(['/api/busi/BusyRevert', '/api/busi/ReserveRevert'])
  })

  it('abort of a prepared DTM TCC is its decision: the server cancels the registered branches', async () => {
    const id = gid('tcc-abort')
    await dtm(f.server.base, 'prepare', { gid: id, trans_type: 'tcc' })
    const branch = { gid: id, trans_type: 'tcc', branch_id: '01', data: '{}', cancel: `${f.busi}/Cancel` }
    await dtm(f.server.base, 'registerBranch', branch)
    const shown = await cli('show', id)
    expect(shown.stdout).toMatch(/^registered by the application \(DTM TCC\)\nBRANCH_ID\s+CONFIRM\s+CANCEL\n01\s+http/m)
    expect(JSON.parse((await cli('show', id, '--json')).stdout).registered).toEqual([
      { branch_id: '01', confirm: '', cancel: `${f.busi}/Cancel`, data: '{}' },
    ])
    const aborted = await cli('abort', id, '--json')
    expect(JSON.parse(aborted.stdout)).toMatchObject({ gid: id, requested: 'abort' })
    await eventually(async () => (await statusOf(id)) === 'failed')
    expect(f.participant.callsTo('/api/busi/Cancel', id).map((c) => c.op)).toEqual(['cancel'])
    // The TCC's registration and decision records are hidden from list (shown with --all).
    const listed = JSON.parse((await cli('list', '--json')).stdout) as { gid: string }[]
    expect(listed.some((t) => t.gid.startsWith(`${id}/`))).toBe(false)
    const all = JSON.parse((await cli('list', '--json', '--all')).stdout) as { gid: string }[]
    expect(all.map((t) => t.gid)).toContain(`${id}/decision`)
  })

  it('the bin script (the built CLI) lists the same transactions as JSON', async () => {
    const viaBin = await runCli(['list', '--json', '--all', '--store', f.store], { bin: true })
    expect(viaBin.stderr).toBe('')
    expect(viaBin.code).toBe(0)
    const fromSources = JSON.parse((await cli('list', '--json', '--all')).stdout) as { gid: string }[]
    expect((JSON.parse(viaBin.stdout) as { gid: string }[]).map((t) => t.gid)).toEqual(fromSources.map((t) => t.gid))
    expect(fromSources.length).toBeGreaterThan(0)
  })

  it('errors: show of an unknown gid exits 1, a bad option exits 2 with the usage, a bad store URL exits 1 (password hidden)', async () => {
    const missing = await cli('show', 'no-such-gid')
    expect(missing.code).toBe(1)
    expect(missing.stderr).toMatch(/no transaction no-such-gid/)
    const bad = await cli('list', '--kind', 'bogus')
    expect(bad.code).toBe(2)
    expect(bad.stderr).toMatch(/--kind must be saga, tcc or xa, received bogus/)
    expect(bad.stderr).toMatch(/usage:/)
    const store = await runCli(['serve', '--store', 'redis://user:secret@127.0.0.1:6379', '--port', '0'])
    expect(store.code).toBe(1)
    expect(store.stderr).toMatch(/store URL must start with sqlite:, postgres:\/\/ or mysql:\/\//)
    expect(store.stderr).not.toMatch(/secret/)
  })
})
