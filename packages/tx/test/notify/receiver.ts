/**
 * A real HTTP receiver of notifications (node:http on a random port): it records every delivery (time, body,
 * idempotency key), fails the first `failFirst` deliveries with 503 (or `failWith`), and answers the reconcile
 * query from what it stored (200 `{ received: true }` / 404), unless told to claim it has one anyway.
 */
import { createServer, type IncomingMessage } from 'node:http'
import type { AddressInfo } from 'node:net'

export interface Delivery {
  readonly at: number
  readonly key: string | undefined
  readonly body: unknown
  readonly status: number
}

export interface Receiver {
  readonly url: string
  readonly reconcileUrl: string
  readonly deliveries: Delivery[]
  readonly reconciles: { at: number; gid: string; answer: number }[]
  /** How many more deliveries fail. */
  failFirst: number
  failWith: number
  /** Store the body even when answering with a failure (the answer is "lost"). */
  storeOnFailure: boolean
  close(): Promise<void>
}

async function read(req: IncomingMessage): Promise<unknown> {
  let text = ''
  for await (const chunk of req) text += chunk
  return text === '' ? null : JSON.parse(text)
}

export async function startReceiver(failFirst = 0): Promise<Receiver> {
  const stored = new Set<string>()
  const r: Omit<Receiver, 'url' | 'reconcileUrl' | 'close'> = {
    deliveries: [],
    reconciles: [],
    failFirst,
    failWith: 503,
    storeOnFailure: false,
  }
  const server = createServer((req, res) => {
    void read(req).then((body) => {
      if (req.url === '/reconcile') {
        const gid = (body as { gid: string }).gid
        const answer = stored.has(gid) ? 200 : 404
        r.reconciles.push({ at: Date.now(), gid, answer })
        res.writeHead(answer, { 'content-type': 'application/json' }).end(JSON.stringify({ received: answer === 200 }))
        return
      }
      const key = req.headers['idempotency-key'] as string | undefined
      const fail = r.failFirst > 0
      if (fail) r.failFirst--
      const status = fail ? r.failWith : 200
      if ((!fail || r.storeOnFailure) && key !== undefined) stored.add(key)
      r.deliveries.push({ at: Date.now(), key, body, status })
      res.writeHead(status).end(fail ? 'not now' : 'ok')
    })
  })
  server.listen(0, '127.0.0.1')
  await new Promise((resolve) => server.once('listening', resolve))
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
  return Object.assign(r, {
    url: `${base}/notify`,
    reconcileUrl: `${base}/reconcile`,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections()
        server.close(() => resolve())
      }),
  })
}
