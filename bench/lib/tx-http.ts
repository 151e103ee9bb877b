/**
 * The HTTP-branch variant of the latchkey-tx benchmark (DTM's setting): a local participant service whose
 * handler is the same participant call (its own database transaction, 2 writes, inside the barrier), and
 * the saga and TCC whose branches are `http(url)` calls to it. The service runs in the benchmark's process, so
 * it shares the event loop (and the machine's 2 cores) with the coordinator.
 */
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import type { Coordinator } from 'latchkey-tx'
import { http } from 'latchkey-tx/http'
import type { Participant } from './tx-participant.js'
import { baselineOps, type Op, type Protocol } from './tx-workload.js'

/** A running participant service. */
export interface HttpParticipant {
  /** A saga and a TCC over HTTP branches, each branch 2 writes + barrier. */
  readonly ops: Record<Protocol, Op>
  /** The same HTTP calls with no coordinator and no barrier (2 for a saga, 4 for a TCC). */
  readonly baseline: Record<Protocol, Op>
  close(): Promise<void>
}

/** Starts the participant service on a free local port and defines `bench-http` transactions on `tc`. */
export async function startHttpParticipant(tc: Coordinator, p: Participant): Promise<HttpParticipant> {
  const server: Server = createServer((req, res) => {
    let body = ''
    req.setEncoding('utf8')
    req.on('data', (chunk: string) => {
      body += chunk
    })
    req.on('end', () => {
      const call = JSON.parse(body) as { gid: string; branch: string; op: string; barrier?: boolean }
      const key = call.barrier === false ? undefined : { gid: call.gid, branch: call.branch, op: call.op }
      p.branch(2, key).then(
        () => res.writeHead(200, { 'content-type': 'application/json' }).end('{}'),
        // 5xx: the coordinator retries (a barrier conflict or a database hiccup).
        (error: unknown) => res.writeHead(503).end(String(error)),
      )
    })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/branch`
  const branch = http(url)
  const saga = tc
    .saga('bench-http')
    .step('out', { action: branch, compensate: branch })
    .step('in', { action: branch, compensate: branch })
  const tcc = tc.tcc('bench-http', {
    out: { try: branch, confirm: branch, cancel: branch },
    in: { try: branch, confirm: branch, cancel: branch },
  })
  const check = (r: { status: string; gid: string }) => {
    if (r.status !== 'succeeded') throw new Error(`global transaction ${r.gid} ended ${r.status}`)
  }
  const post = async () => {
    const r = await fetch(url, {
      method: 'POST',
      body: JSON.stringify({ gid: 'x', branch: 'b', op: 'action', barrier: false }),
    })
    await r.arrayBuffer()
    if (!r.ok) throw new Error(`participant answered ${r.status}`)
  }
  const direct = baselineOps({ ...p, branch: () => post() })
  return {
    ops: {
      saga: async () => check(await saga.run({ amount: 1 })),
      tcc: async () => check(await tcc.run({ amount: 1 })),
    },
    baseline: direct,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  }
}
