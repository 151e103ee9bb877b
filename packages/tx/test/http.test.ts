import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest'
import { http } from '../src/http/index.js'
import { TxAbortedError } from '../src/index.js'
import { sqliteHarness } from './support/coordinators.js'

type Reply = { status: number; body?: unknown } | 'hang'
interface Received {
  path: string
  body: { gid: string; branch: string; op: string; input: unknown }
}

/** A participant service: answers each path with the next scripted reply (the last one repeats). */
let server: Server
let base: string
const received: Received[] = []
const script = new Map<string, Reply[]>()

beforeAll(async () => {
  server = createServer((req, res) => {
    let data = ''
    req.on('data', (chunk) => {
      data += chunk
    })
    req.on('end', () => {
      const path = req.url ?? '/'
      received.push({ path, body: JSON.parse(data) })
      const replies = script.get(path) ?? [{ status: 200 }]
      const reply = (replies.length > 1 ? replies.shift() : replies[0]) as Reply
      if (reply === 'hang') return // never answered: the client's timeout fires
      res.writeHead(reply.status, { 'content-type': 'application/json' })
      res.end(reply.body === undefined ? '' : JSON.stringify(reply.body))
    })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
})
afterAll(async () => {
  server.closeAllConnections()
  await new Promise((resolve) => server.close(resolve))
})

let h: ReturnType<typeof sqliteHarness>
beforeEach(() => {
  h = sqliteHarness()
  received.length = 0
  script.clear()
})
afterEach(async () => {
  await h.close()
})

const calls = () => received.map((r) => `${r.path}:${r.body.op}`)

describe('http branches', () => {
  it('posts { gid, branch, op, input } and stores a 2xx JSON body as the result', async () => {
    const tc = h.coordinator()
    script.set('/reserve', [{ status: 200, body: { hold: 'H1' } }])
    script.set('/charge', [{ status: 201 }])
    const r = await tc
      .saga('order')
      .step('reserve', { action: http(`${base}/reserve`), compensate: http(`${base}/release`) })
      .step('charge', { action: http(`${base}/charge`), compensate: http(`${base}/refund`) })
      .run({ sku: 'A', qty: 2 }, { gid: 'http-1' })
    expect(r).toMatchObject({ status: 'succeeded', results: { reserve: { hold: 'H1' }, charge: null } })
    expect(received.map((x) => x.body)).toEqual([
      { gid: 'http-1', branch: 'reserve', op: 'action', input: { sku: 'A', qty: 2 } },
      { gid: 'http-1', branch: 'charge', op: 'action', input: { sku: 'A', qty: 2 } },
    ])
  })

  it('409 fails a forward step: the saga compensates over HTTP, the failed step too', async () => {
    const tc = h.coordinator()
    script.set('/charge', [{ status: 409, body: { reason: 'card declined' } }])
    const r = await tc
      .saga('order')
      .step('reserve', { action: http(`${base}/reserve`), compensate: http(`${base}/release`) })
      .step('charge', { action: http(`${base}/charge`), compensate: http(`${base}/refund`) })
      .run({})
    expect(r.status).toBe('failed')
    expect(r.error).toBeInstanceOf(TxAbortedError)
    expect(r.error?.message).toMatch(/answered 409.*card declined/)
    expect(calls()).toEqual(['/reserve:action', '/charge:action', '/refund:compensate', '/release:compensate'])
  })

  it('425, 5xx and timeouts are retried; a 409 from a compensation is retried too', async () => {
    const tc = h.coordinator({ retry: { firstMs: 5, maxMs: 10, attempts: 6 } })
    script.set('/slow', [{ status: 425 }, { status: 503 }, 'hang', { status: 200, body: 'ok' }])
    script.set('/undo', [{ status: 409 }, { status: 500 }, { status: 204 }])
    script.set('/fail', [{ status: 409 }])
    const r = await tc
      .saga('retrying')
      .step('slow', { action: http(`${base}/slow`, { timeoutMs: 100 }), compensate: http(`${base}/undo`) })
      .step('fail', { action: http(`${base}/fail`), compensate: http(`${base}/undo2`) })
      .run({})
    expect(calls().filter((c) => c === '/slow:action')).toHaveLength(4)
    const tx = await tc.get(r.gid)
    expect(
      tx?.history
        .filter((e) => e.type === 'branch-retry' && e.branch === 'slow' && e.op === 'action')
        .map((e) => e.detail),
    ).toEqual([
      expect.stringMatching(/answered 425.*ongoing/),
      expect.stringMatching(/answered 503/),
      expect.stringMatching(/timed out/),
    ])
    expect(r.status).toBe('failed')
    expect(r.results).toEqual({ slow: 'ok' })
    expect(calls().slice(4)).toEqual([
      '/fail:action',
      '/undo2:compensate',
      '/undo:compensate',
      '/undo:compensate',
      '/undo:compensate',
    ])
  })

  it('an unreachable participant is retried, then the transaction is parked', async () => {
    const tc = h.coordinator({ retry: { firstMs: 5, maxMs: 10, attempts: 2 } })
    const closed = createServer()
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve))
    const port = (closed.address() as AddressInfo).port
    await new Promise((resolve) => closed.close(resolve))
    const r = await tc
      .saga('down')
      .step('x', { action: http(`http://127.0.0.1:${port}/x`) })
      .run({})
    expect(r.status).toBe('parked')
    expect((await tc.get(r.gid))?.branches[0]?.lastError).toMatch(/ECONNREFUSED/)
  })

  it("a 200 whose body says DTM's FAILURE fails the step; ONGOING is asked again", async () => {
    const tc = h.coordinator({ retry: { firstMs: 5, maxMs: 10, attempts: 6 } })
    script.set('/later', [
      { status: 200, body: { dtm_result: 'ONGOING' } },
      { status: 200, body: { dtm_result: 'SUCCESS' } },
    ])
    script.set('/charge', [{ status: 200, body: { dtm_result: 'FAILURE' } }])
    const r = await tc
      .saga('order')
      .step('later', { action: http(`${base}/later`), compensate: http(`${base}/unlater`) })
      .step('charge', { action: http(`${base}/charge`), compensate: http(`${base}/refund`) })
      .run({})
    expect(r.status).toBe('failed')
    expect(r.error?.message).toMatch(/FAILURE/)
    expect(calls()).toEqual([
      '/later:action',
      '/later:action',
      '/charge:action',
      '/refund:compensate',
      '/unlater:compensate',
    ])
  })

  it('http.tcc posts try, confirm and cancel to one URL', async () => {
    const tc = h.coordinator()
    script.set('/b', [{ status: 409 }, { status: 200 }])
    const r = await tc.tcc('transfer', { a: http.tcc(`${base}/a`), b: http.tcc(`${base}/b`) }).run({ amount: 5 })
    expect(r.status).toBe('failed')
    expect(calls()).toEqual(['/a:try', '/b:try', '/b:cancel', '/a:cancel'])
  })

  it('rejects bad URLs and options before any request', () => {
    expect(() => http('not a url')).toThrow(TypeError)
    expect(() => http('ftp://x/y')).toThrow(RangeError)
    expect(() => http(42 as never)).toThrow(TypeError)
    expect(() => http(`${base}/x`, { timeoutMs: 0 })).toThrow(/timeoutMs/)
    expect(() => http(`${base}/x`, null as never)).toThrow(TypeError)
  })
})
