import { type ClientRequest, get, type IncomingMessage } from 'node:http'
import { join } from 'node:path'
import { createLocks } from 'latchkey'
import { memoryBackend } from 'latchkey/memory'
import { eventually } from 'latchkey/testing'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { buildApp } from '../src/server/app.js'
import { createMetrics } from '../src/server/metrics.js'
import { sqliteStore } from '../src/store/sqlite-store.js'
import type { SaleStore } from '../src/store/types.js'
import { ADMIN_TOKEN, tempDir } from './support.js'

const CAP = 60
/** How long the streams may take to show an event: 60 of them share one loaded machine. */
const WITHIN_MS = 15_000
const INTERVAL_MS = 50

/** One open `GET /events` over real HTTP and the `data:` payloads it received so far. */
interface Stream {
  readonly request: ClientRequest
  readonly response: IncomingMessage
  readonly events: string[]
}

function openStream(url: string): Promise<Stream | { status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const request = get(`${url}/events`, (response) => {
      response.setEncoding('utf8')
      if (response.statusCode !== 200) {
        let body = ''
        response.on('data', (chunk: string) => {
          body += chunk
        })
        response.on('end', () => resolve({ status: response.statusCode ?? 0, body }))
        return
      }
      const events: string[] = []
      let buffer = ''
      response.on('data', (chunk: string) => {
        buffer += chunk
        let end = buffer.indexOf('\n\n')
        while (end >= 0) {
          const event = buffer.slice(0, end)
          buffer = buffer.slice(end + 2)
          if (event.startsWith('data: ')) events.push(event.slice('data: '.length))
          end = buffer.indexOf('\n\n')
        }
      })
      response.on('error', () => undefined)
      resolve({ request, response, events })
    })
    request.on('error', reject)
  })
}

/** Counts `listSales` calls (the event streams' only store read). */
function countingStore(store: SaleStore): { store: SaleStore; calls(): number } {
  let calls = 0
  const wrapped = new Proxy(store, {
    get(target, key) {
      const value = Reflect.get(target, key, target) as unknown
      if (typeof value !== 'function') return value
      const method = value.bind(target) as (...args: unknown[]) => unknown
      if (key !== 'listSales') return method
      return (...args: unknown[]) => {
        calls++
        return method(...args)
      }
    },
  })
  return { store: wrapped, calls: () => calls }
}

describe(`/events: one store poll per process for every stream, at most ${CAP} streams`, () => {
  const dir = tempDir()
  const backend = memoryBackend()
  const locks = createLocks({ backend })
  const store = sqliteStore(join(dir.path, 'store.db'))
  const counted = countingStore(store)
  const app = buildApp({
    store: counted.store,
    locks,
    metrics: createMetrics(),
    adminToken: ADMIN_TOKEN,
    maxEventStreams: CAP,
    eventIntervalMs: INTERVAL_MS,
  })
  const streams: Stream[] = []
  let url: string

  beforeAll(async () => {
    url = await app.listen({ host: '127.0.0.1', port: 0 })
  })
  afterAll(async () => {
    for (const stream of streams) stream.request.destroy()
    await app.close()
    await locks.close()
    await backend.close()
    await store.close()
    dir.remove()
  })

  it(`${CAP} streams open, the ${CAP + 1}st is answered 503 TOO_MANY_STREAMS`, async () => {
    for (let i = 0; i < CAP; i++) {
      const stream = await openStream(url)
      if (!('events' in stream)) throw new Error(`stream ${i} refused: ${stream.status} ${stream.body}`)
      streams.push(stream)
    }
    await eventually('every stream got its first event', () => streams.every((s) => s.events.length >= 1), WITHIN_MS)

    const extra = await openStream(url)
    expect('status' in extra && extra.status).toBe(503)
    expect(JSON.parse((extra as { body: string }).body)).toMatchObject({ code: 'TOO_MANY_STREAMS' })
  })

  it(`with ${CAP} streams open the store is read once per tick for all, and /healthz answers`, async () => {
    const callsBefore = counted.calls()
    const seenBefore = streams.map((s) => s.events.length)
    await eventually(
      'every stream got 5 more events',
      () => streams.every((s, i) => s.events.length >= (seenBefore[i] ?? 0) + 5),
      WITHIN_MS,
    )
    const ticks = Math.max(...streams.map((s, i) => s.events.length - (seenBefore[i] ?? 0)))
    // One read per tick (one more may be under way), not one per stream and tick (CAP times as many).
    expect(counted.calls() - callsBefore).toBeLessThanOrEqual(ticks + 1)

    const health = await fetch(`${url}/healthz`)
    expect(health.status).toBe(200)
    expect(await health.json()).toMatchObject({ ok: true })
  })

  it('every stream receives the same update', async () => {
    const sale = await store.createSale({ item: 'tv', stock: 3, startsAt: Date.now(), strategy: 'lock', buckets: 1 })
    const firstWith = (s: Stream): string | undefined => s.events.find((e) => e.includes(sale.id))
    await eventually('every stream saw the new sale', () => streams.every((s) => firstWith(s) !== undefined), WITHIN_MS)
    const updates = new Set(streams.map(firstWith))
    // The very same payload (same `at`, same figures): built once, written to all.
    expect(updates.size).toBe(1)
  })

  it('a stream closed frees its place for a new one', async () => {
    ;(streams.pop() as Stream).request.destroy()
    // The server learns of the close asynchronously: refused (503) until then, accepted after.
    let reopened: Stream | undefined
    const reopen = async (): Promise<boolean> => {
      const attempt = await openStream(url)
      if ('events' in attempt) reopened = attempt
      else if (attempt.status !== 503) throw new Error(`not reopened: ${attempt.status}`)
      return reopened !== undefined
    }
    await eventually('a new stream was accepted', reopen, 10_000)
    const stream = reopened as Stream
    streams.push(stream)
    await eventually('the new stream got an event', () => stream.events.length > 0, WITHIN_MS)
  })
})
