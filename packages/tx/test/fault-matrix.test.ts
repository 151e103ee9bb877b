/**
 * The fault-matrix rows about participants and time (rows 5, 8, 10, 12 of the research note's matrix), in
 * process against real servers: a participant service over HTTP with its business data and the barrier on
 * PostgreSQL, a SQLite log. Rows 1-4 and 11 (a coordinator that dies or stalls) are in
 * `fault-matrix-crash.test.ts`; rows 6 and 7 are proved by `barrier.test.ts`; the table is in the README.
 */
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest'
import { http } from '../src/http/index.js'
import { TxParkedError, TxTimeoutError } from '../src/index.js'
import { type Bank, openBank } from './support/bank.js'
import { sqliteHarness } from './support/coordinators.js'
import { eventually } from './support/eventually.js'

/** The participant service: what each request does, set per test. */
let handle: (
  body: { gid: string; op: 'try' | 'confirm' | 'cancel' },
  res: import('node:http').ServerResponse,
) => Promise<void>
let server: Server
let base: string
let bank: Bank
let h: ReturnType<typeof sqliteHarness>

beforeAll(async () => {
  bank = await openBank('postgres')
  server = createServer((req, res) => {
    let data = ''
    req.on('data', (chunk) => {
      data += chunk
    })
    req.on('end', () => {
      handle(JSON.parse(data), res).catch(() => res.writeHead(500).end())
    })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
})
afterAll(async () => {
  server?.closeAllConnections()
  await new Promise((resolve) => server?.close(resolve))
  await bank?.close()
})
beforeEach(() => {
  h = sqliteHarness()
})
afterEach(async () => {
  await h.close()
})

describe('fault matrix: participants and time', () => {
  it('fault matrix row 5: participant commits locally, then the reply is lost: the retry hits the barrier, the effect happens once', async () => {
    const before = await bank.balance()
    const outcomes: string[] = []
    handle = async ({ gid, op }, res) => {
      const outcome = await bank.call(gid, op, 10) // barrier + business update, committed
      outcomes.push(`${op}:${outcome}`)
      if (op === 'try' && outcomes.length === 1)
        res.socket?.destroy() // the reply is lost
      else res.writeHead(200).end()
    }
    const tc = h.coordinator()
    const r = await tc.tcc('row5', { out: http.tcc(`${base}/out`) }).run({})
    expect(r.status).toBe('succeeded')
    expect(outcomes).toEqual(['try:applied', 'try:duplicate', 'confirm:applied'])
    expect(await bank.balance()).toBe(before - 10)
  })

  it('fault matrix row 8: a try fails after a non-database side effect: the cancel still runs the user compensation', async () => {
    const sent = new Set<string>() // an external system (e-mail, a partner API): no barrier row can undo it
    const calls: string[] = []
    const tc = h.coordinator()
    const r = await tc
      .tcc('row8', {
        x: {
          try: ({ gid }) => {
            calls.push('x:try')
            sent.add(gid)
            throw new Error('x failed after notifying the partner')
          },
          confirm: () => void calls.push('x:confirm'),
          cancel: ({ gid }) => {
            calls.push('x:cancel')
            sent.delete(gid)
          },
        },
        y: { try: () => void calls.push('y:try'), confirm: () => undefined, cancel: () => void calls.push('y:cancel') },
      })
      .run({})
    expect(r.status).toBe('failed')
    expect(calls).toEqual(['x:try', 'y:cancel', 'x:cancel'])
    expect(sent.size).toBe(0)
  })

  it('fault matrix row 10: the global timeout fires while a try is still active: it is cancelled once it ends, no retry storm', async () => {
    const calls: string[] = []
    const tc = h.coordinator({ timeoutMs: 1_000 })
    const op = (name: string) => () => void calls.push(name)
    const r = await tc
      .tcc('row10', {
        x: { try: op('x:try'), confirm: op('x:confirm'), cancel: op('x:cancel') },
        y: {
          // Still active when the deadline passes; it then succeeds.
          try: async ({ gid }) => {
            calls.push('y:try')
            const deadline = (await tc.get(gid))?.deadlineAt ?? 0
            await eventually(() => Date.now() > deadline)
          },
          confirm: op('y:confirm'),
          cancel: op('y:cancel'),
        },
      })
      .run({})
    expect(r.status).toBe('failed')
    expect(r.error).toBeInstanceOf(TxTimeoutError)
    expect(calls).toEqual(['x:try', 'y:try', 'y:cancel', 'x:cancel'])
  })

  it('fault matrix row 12: a participant answers 5xx forever: backoff, an alert event, a retry limit, parked for a human, then tc.retry', async () => {
    let healthy = false
    handle = async (_, res) => void res.writeHead(healthy ? 200 : 503).end()
    const tc = h.coordinator({ retry: { firstMs: 5, maxMs: 40, attempts: 4 } })
    const saga = tc.saga('row12').step('notify', { action: http(`${base}/notify`) })
    const r = await saga.run({})
    expect(r.status).toBe('parked')
    expect(r.error).toBeInstanceOf(TxParkedError)
    const tx = await tc.get(r.gid)
    expect(tx?.error).toMatch(/503/)
    const retries = tx?.history.filter((e) => e.type === 'branch-retry') ?? []
    expect(retries.map((e) => e.detail?.match(/attempt (\d)/)?.[1])).toEqual(['1', '2', '3'])
    expect(retries.every((e) => /next in \d+ ms/.test(e.detail ?? ''))).toBe(true)
    // The alert hook: one `parked` event carrying the error a human needs.
    const alerts = h.events.filter((e) => e.type === 'parked' && e.gid === r.gid)
    expect(alerts).toHaveLength(1)
    expect(alerts[0]?.error).toBeInstanceOf(TxParkedError)
    healthy = true
    expect((await tc.retry(r.gid)).status).toBe('succeeded')
  })
})
