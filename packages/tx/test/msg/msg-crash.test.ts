/**
 * The producer of a transactional message is killed with SIGKILL (a child process) around its local transaction;
 * the coordinator in this process settles the message with the check-back, on each producer database:
 * - between the local commit and the submit (the lost submit): the check-back finds the committed barrier row,
 *   submits, and the branch runs exactly once;
 * - between prepare and the local commit: the database rolled the transaction back; the check-back's rollback
 *   row wins, the message fails, the branch never runs.
 * The check-back reaches the producer's database three ways: a database handle (SQLite), DTM's HTTP
 * QueryPrepared URL served with `queryPrepared` (PostgreSQL), a function (MariaDB).
 */
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { type CheckBack, type Coordinator, createCoordinator, queryPrepared, type TxEvent } from '../../src/index.js'
import { DIALECTS, tempDir } from '../support/databases.js'
import { eventually } from '../support/eventually.js'
import { startProducer } from './msg-process.js'
import { createOrders, openProducerDb, type ProducerDb } from './producer-db.js'

describe.each(DIALECTS)('transactional message: producer killed (%s)', (dialect) => {
  const tmp = tempDir()
  const storeUrl = `sqlite:${tmp.dir}/tx.db`
  let p: ProducerDb
  let tc: Coordinator
  let server: Server | undefined
  const calls: string[] = []
  const events: TxEvent[] = []

  beforeAll(async () => {
    p = openProducerDb(dialect)
    await createOrders(p)
    const options = { table: p.barrierTable }
    let checkBack: CheckBack = p.other
    if (dialect === 'postgres') {
      // DTM's QueryPrepared endpoint, as a producer would serve it.
      server = createServer((req, res) => {
        const gid = new URL(req.url ?? '', 'http://x').searchParams.get('gid') ?? ''
        queryPrepared(p.other, gid, options).then(
          (outcome) => res.writeHead(outcome === 'committed' ? 200 : 409).end(),
          () => res.writeHead(500).end(),
        )
      }).listen(0, '127.0.0.1')
      await new Promise((resolve) => server?.once('listening', resolve))
      checkBack = `http://127.0.0.1:${(server.address() as AddressInfo).port}/query-prepared`
    } else if (dialect === 'mysql') {
      checkBack = ({ gid }) => queryPrepared(p.other, gid, options)
    }
    tc = createCoordinator({
      store: storeUrl,
      recoverEveryMs: 100,
      retry: { firstMs: 20, maxMs: 200, attempts: 50 },
      onEvent: (e) => events.push(e),
    })
    tc.msg('order-created', { checkBack, barrierTable: p.barrierTable }).add(({ gid }) => void calls.push(gid))
  })
  afterAll(async () => {
    await tc?.close()
    server?.close()
    await p?.drop()
    tmp.remove()
  })

  it('killed between the local commit and the submit: the check-back submits, the branch runs exactly once', async () => {
    const gid = `${p.prefix}lost-submit`
    const producer = startProducer(p.spec, storeUrl, gid, 'run', 'msg:after-local-commit')
    expect(await producer.exited).toBe('SIGKILL')
    expect(producer.lines).toContain('latchkey-tx crash-point msg:after-local-commit')
    expect(await p.orders(gid)).toBe(1)
    const done = await eventually(async () => {
      const tx = await tc.get(gid)
      return tx?.status === 'succeeded' && tx
    }, 20_000)
    expect(calls.filter((c) => c === gid)).toHaveLength(1)
    expect(producer.lines).not.toContain('branch-called')
    expect(done.history.map((h) => h.type)).toEqual([
      'created',
      'recovered',
      'branch-start',
      'branch-succeeded',
      'submitted',
      'branch-start',
      'branch-succeeded',
      'succeeded',
    ])
    expect(done.branches.find((b) => b.id === 'local')?.result).toBe('committed')
    expect(await p.barrierReason(gid)).toBe('msg')
    // Only after the prepare timeout the producer set (300 ms from the prepare).
    const created = done.history[0]?.at ?? 0
    expect(done.history[2]?.at ?? 0).toBeGreaterThanOrEqual(created + 300)
  })

  it('killed between prepare and the local commit: rolled back, the message fails, the branch never runs', async () => {
    const gid = `${p.prefix}no-commit`
    const producer = startProducer(p.spec, storeUrl, gid, 'run', 'msg:before-local-commit')
    expect(await producer.exited).toBe('SIGKILL')
    const done = await eventually(async () => {
      const tx = await tc.get(gid)
      return tx?.status === 'failed' && tx
    }, 20_000)
    expect(done.branches.find((b) => b.id === 'local')?.result).toBe('rolled-back')
    expect(done.error).toMatch(/rolled back/)
    expect(await p.orders(gid)).toBe(0)
    expect(await p.barrierReason(gid)).toBe('rollback')
    expect(calls).not.toContain(gid)
    expect(events.some((e) => e.gid === gid && e.type === 'recovered')).toBe(true)
  })
})
