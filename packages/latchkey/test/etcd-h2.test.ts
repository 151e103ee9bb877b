/**
 * The etcd transport's HTTP/2 layer (`src/backends/etcd/wire/h2-session.ts`, `hpack.ts`): HPACK against the
 * RFC's examples, and the connection-level protocol against a node:http2 server standing in for etcd (flow
 * control both ways beyond the first windows, PING, RST_STREAM, GOAWAY, a lost connection).
 */
import http2 from 'node:http2'
import type { AddressInfo } from 'node:net'
import { afterEach, describe, expect, it } from 'vitest'
import { GrpcConnection, GrpcError } from '../src/backends/etcd/wire/grpc-http2.js'
import { encodeHeaders, HpackDecoder } from '../src/backends/etcd/wire/hpack.js'
import type { ProtoReader } from '../src/backends/etcd/wire/protobuf.js'
import { eventually } from '../src/testing/eventually.js'

const hex = (s: string) => Buffer.from(s.replace(/\s+/g, ''), 'hex')

describe('hpack', () => {
  it("decodes RFC 7541's Huffman-coded requests (C.4), the dynamic table carried from one block to the next", () => {
    const d = new HpackDecoder()
    expect(d.decode(hex('8286 8441 8cf1 e3c2 e5f2 3a6b a0ab 90f4 ff'))).toEqual({
      ':method': 'GET',
      ':scheme': 'http',
      ':path': '/',
      ':authority': 'www.example.com',
    })
    expect(d.decode(hex('8286 84be 5886 a8eb 1064 9cbf'))).toMatchObject({
      ':authority': 'www.example.com',
      'cache-control': 'no-cache',
    })
    expect(d.decode(hex('8287 85bf 4088 25a8 49e9 5ba9 7d7f 8925 a849 e95b b8e8 b4bf'))).toEqual({
      ':method': 'GET',
      ':scheme': 'https',
      ':path': '/index.html',
      ':authority': 'www.example.com',
      'custom-key': 'custom-value',
    })
    // A table size update to 0 empties the dynamic table: its entries can no longer be referred to.
    expect(() => d.decode(hex('20 be'))).toThrow(/out of range/)
  })

  it('encodes fields that decode back to themselves and leave both tables as they were', () => {
    const fields = [
      [':method', 'POST'],
      [':path', '/etcdserverpb.KV/Txn'],
      ['content-type', 'application/grpc'],
      ['grpc-timeout', '5000m'],
    ] as const
    const d = new HpackDecoder()
    const block = encodeHeaders(fields)
    expect(d.decode(block)).toEqual(Object.fromEntries(fields))
    expect(d.decode(block)).toEqual(Object.fromEntries(fields))
  })
})

/** A gRPC-shaped server: `handle` answers each stream. */
async function server(handle: (stream: http2.ServerHttp2Stream, body: Buffer) => void) {
  const s = http2.createServer()
  s.on('stream', (stream) => {
    const chunks: Buffer[] = []
    stream.on('error', () => {}) // a stream the test resets
    stream.on('data', (c: Buffer) => chunks.push(c))
    stream.on('end', () => handle(stream, Buffer.concat(chunks)))
  })
  await new Promise<void>((resolve) => s.listen(0, '127.0.0.1', resolve))
  return { s, url: `http://127.0.0.1:${(s.address() as AddressInfo).port}` }
}

const framed = (body: Buffer) => {
  const out = Buffer.alloc(5 + body.length)
  out.writeUInt32BE(body.length, 1)
  body.copy(out, 5)
  return out
}

/** Answers with `body` as one gRPC message and status OK. */
function answer(stream: http2.ServerHttp2Stream, body: Buffer): void {
  stream.respond({ ':status': 200, 'content-type': 'application/grpc' }, { waitForTrailers: true })
  stream.on('wantTrailers', () => stream.sendTrailers({ 'grpc-status': '0', 'grpc-message': '' }))
  stream.end(framed(body))
}

/** The whole message a reader is on (its fields are private: this layer's tests do not parse protobuf). */
const whole = (reader: ProtoReader) => {
  const r = reader as unknown as { buf: Buffer; pos: number; end: number }
  return r.buf.subarray(r.pos, r.end)
}

describe('http2 session', () => {
  const cleanup: Array<() => void> = []
  afterEach(() => {
    for (const f of cleanup.splice(0)) f()
  })
  const open = async (handle: (stream: http2.ServerHttp2Stream, body: Buffer) => void) => {
    const { s, url } = await server(handle)
    const c = new GrpcConnection([url])
    cleanup.push(() => {
      c.close()
      s.close()
    })
    return { s, c }
  }

  it('sends and receives bodies far past the first flow-control windows (64 KiB, and ours of 1 MiB)', async () => {
    // The server echoes the request three times over: 5 MiB back on one stream.
    const echo = (body: Buffer) => Buffer.concat([body, body, body]).subarray(5)
    const { c } = await open((stream, body) => answer(stream, echo(body)))
    const request = Buffer.alloc(5 + 1.7 * 2 ** 20, 7)
    request.writeUInt32BE(request.length - 5, 1)
    const reply = await c.unary('/echo', request, whole, 10_000)
    expect(reply.equals(echo(request))).toBe(true)
  })

  it("answers the server's PING, and reports a trailers-only status with its message", async () => {
    let pinged: Promise<boolean> | undefined
    const { c } = await open((stream) => {
      pinged = new Promise((resolve) => stream.session?.ping((error) => resolve(error === null)))
      stream.respond(
        { ':status': 200, 'content-type': 'application/grpc', 'grpc-status': '5', 'grpc-message': 'not%20here' },
        { endStream: true },
      )
    })
    const error = await c.unary('/x', framed(Buffer.alloc(0)), () => 1, 5_000).catch((e: unknown) => e)
    expect(error).toBeInstanceOf(GrpcError)
    expect((error as GrpcError).code).toBe(5)
    expect((error as Error).message).toMatch(/not here/)
    expect(await pinged).toBe(true)
  })

  it('a reset stream and a lost connection fail their calls as UNAVAILABLE; the next call connects again', async () => {
    let calls = 0
    const { c } = await open((stream) => {
      calls++
      if (calls === 1) stream.close(http2.constants.NGHTTP2_INTERNAL_ERROR)
      else if (calls === 2) stream.session?.destroy()
      else answer(stream, Buffer.from('ok'))
    })
    const call = () => c.unary('/x', framed(Buffer.alloc(0)), (r) => whole(r).toString(), 5_000)
    await expect(call()).rejects.toThrow(/UNAVAILABLE/)
    await expect(call()).rejects.toThrow(/UNAVAILABLE/)
    expect(await call()).toBe('ok')
  })

  /**
   * The server holds the first call and sends a GOAWAY that covers only it: when that call arrives, or only when a
   * second call arrives on the same connection (sent before the GOAWAY reached the client). Either way the second
   * call is answered on a new connection and the first finishes on the old one.
   */
  async function goaway(when: 'on the first call' | 'on the second call'): Promise<void> {
    const sessions = new Set<http2.ServerHttp2Session>()
    let held: http2.ServerHttp2Stream | undefined
    const { c } = await open((stream) => {
      const session = stream.session as http2.ServerHttp2Session
      sessions.add(session)
      if (held === undefined) {
        held = stream
        if (when === 'on the first call') session.goaway(0, stream.id)
        return
      }
      if (session === held.session) {
        session.goaway(0, held.id)
        return
      }
      answer(stream, Buffer.from('new'))
    })
    const first = c.unary('/x', framed(Buffer.alloc(0)), (r) => whole(r).toString(), 5_000)
    await eventually('the first call reached the server', () => held !== undefined)
    expect(await c.unary('/x', framed(Buffer.alloc(0)), (r) => whole(r).toString(), 5_000)).toBe('new')
    answer(held as http2.ServerHttp2Stream, Buffer.from('old'))
    expect(await first).toBe('old')
    expect(sessions.size).toBe(2)
  }

  it('after a GOAWAY, the calls it covers finish and new calls go to a new connection', async () => {
    await goaway('on the first call')
  })

  it('a call sent before the GOAWAY arrived, so refused by it, is sent again on a new connection', async () => {
    await goaway('on the second call')
  })
})
