/**
 * The coordinator service over HTTP: DTM's API under `/api/dtmsvr/`, Prometheus metrics on `/metrics` (and
 * DTM's `/api/metrics`), `/healthz`. Plain `node:http`: the API is a handful of JSON routes.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http'
import type { Registry } from 'prom-client'
import type { Coordinator } from '../coordinator/coordinator.js'
import { describe } from '../errors.js'
import type { DtmAnswer, DtmService } from './dtm-service.js'

const GET_OPS = new Set(['newGid', 'query', 'all'])
const POST_OPS = new Set(['prepare', 'submit', 'abort', 'registerBranch', 'registerTccBranch'])
const MAX_BODY = 1024 * 1024

/** Builds the HTTP server (not listening yet). */
export function createTxHttpServer(service: DtmService, tc: Coordinator, metrics: Registry): Server {
  return createServer((req, res) => {
    route(req, service, tc, metrics).then(
      (answer) => send(res, answer),
      (error: unknown) => send(res, { status: 500, body: { dtm_result: 'FAILURE', message: describe(error) } }),
    )
  })
}

type Answer = DtmAnswer | { status: number; text: string; contentType: string }

async function route(req: IncomingMessage, service: DtmService, tc: Coordinator, metrics: Registry): Promise<Answer> {
  const url = new URL(req.url ?? '/', 'http://localhost')
  const path = url.pathname
  if (path === '/metrics' || path === '/api/metrics') {
    return { status: 200, text: await metrics.metrics(), contentType: metrics.contentType }
  }
  if (path === '/healthz' || path === '/api/dtmsvr/ping') {
    try {
      await tc.list({ limit: 1 })
      return { status: 200, body: { status: 'ok', dtm_result: 'SUCCESS' } }
    } catch (error) {
      return { status: 503, body: { status: 'store unavailable', message: describe(error) } }
    }
  }
  const op = path.startsWith('/api/dtmsvr/') ? path.slice('/api/dtmsvr/'.length) : undefined
  if (op === undefined || !(GET_OPS.has(op) || POST_OPS.has(op))) {
    return { status: 404, body: { dtm_result: 'FAILURE', message: `no route ${req.method} ${path}` } }
  }
  const method = GET_OPS.has(op) ? 'GET' : 'POST'
  if (req.method !== method) {
    return { status: 405, body: { dtm_result: 'FAILURE', message: `${path} takes ${method}, received ${req.method}` } }
  }
  let body: unknown
  if (method === 'POST') {
    const text = await readBody(req)
    try {
      body = text === '' ? {} : JSON.parse(text)
    } catch {
      return { status: 400, body: { dtm_result: 'FAILURE', message: 'the body is not JSON' } }
    }
  }
  return service.handle(op, body, url.searchParams)
}

function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    let size = 0
    const chunks: Buffer[] = []
    req.on('data', (chunk: Buffer) => {
      size += chunk.length
      if (size > MAX_BODY) {
        reject(new RangeError(`request body over ${MAX_BODY} bytes`))
        req.destroy()
      } else chunks.push(chunk)
    })
    req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')))
    req.on('error', reject)
  })
}

function send(res: ServerResponse, answer: Answer): void {
  if ('text' in answer) {
    res.writeHead(answer.status, { 'content-type': answer.contentType }).end(answer.text)
    return
  }
  const json = JSON.stringify(answer.body, (_, v: unknown) => (typeof v === 'bigint' ? v.toString() : v))
  res.writeHead(answer.status, { 'content-type': 'application/json' }).end(json)
}
