/**
 * Every outgoing HTTP call keeps its deadline while the garbage collector runs. On Node 20,
 * `AbortSignal.any([signal, AbortSignal.timeout(ms)])` can lose the timeout signal to a collection (both links to
 * it are weak), and a call to a peer that never answers then waits forever: a three-phase coordinator stayed on a
 * partitioned participant's preCommit for 30 s instead of giving up after 1.5 s.
 */
import { createServer, type Server, type Socket } from 'node:net'
import { setFlagsFromString } from 'node:v8'
import { runInNewContext } from 'node:vm'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { BranchContext } from '../src/branch.js'
import { http } from '../src/http/index.js'
import { checkBackOf } from '../src/msg/check-back.js'
import { deliver, type NotifyInput, reconcile } from '../src/notify/deliver.js'
import { callDtmBranch } from '../src/server/dtm-branch-call.js'

// The test process's own collector, as `node --expose-gc` would give it.
setFlagsFromString('--expose-gc')
const gc = runInNewContext('gc') as () => void

/** A peer that accepts connections and never answers (`headersOnly`: sends a status line and headers, no body). */
async function silentPeer(headersOnly: boolean): Promise<{ url: string; close(): Promise<void> }> {
  const sockets = new Set<Socket>()
  const server: Server = createServer((socket) => {
    sockets.add(socket)
    socket.on('error', () => undefined)
    if (headersOnly) {
      socket.once('data', () =>
        socket.write('HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 10\r\n\r\n'),
      )
    }
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const address = server.address()
  const port = typeof address === 'object' && address !== null ? address.port : 0
  return {
    url: `http://127.0.0.1:${port}`,
    close: async () => {
      for (const s of sockets) s.destroy()
      await new Promise((resolve) => server.close(resolve))
    },
  }
}

/** How the call ended, with the collector running every few ms meanwhile; 'still waiting' after `guardMs`. */
async function underCollection(call: () => Promise<unknown>, guardMs: number): Promise<string> {
  const collecting = setInterval(gc, 5)
  let guard: NodeJS.Timeout | undefined
  try {
    return await Promise.race([
      call().then(
        () => 'answered',
        (error: Error) => `rejected: ${error.message}`,
      ),
      new Promise<string>((resolve) => {
        guard = setTimeout(() => resolve('still waiting'), guardMs)
      }),
    ])
  } finally {
    clearInterval(collecting)
    clearTimeout(guard)
  }
}

const TIMEOUT_MS = 200
// Far past the deadline: a call that has not ended by then has lost it.
const GUARD_MS = 10_000

describe.each([
  ['accepts and never answers', false],
  ['sends headers and never the body', true],
])('a peer that %s', (_, headersOnly) => {
  let peer: Awaited<ReturnType<typeof silentPeer>>
  beforeAll(async () => {
    peer = await silentPeer(headersOnly)
  })
  afterAll(async () => {
    await peer.close()
  })
  const live = new AbortController().signal

  it('an http branch call times out', async () => {
    const ctx = { gid: 'g1', branch: 'b1', op: 'action', input: {}, attempt: 1, signal: live } as BranchContext
    const ended = await underCollection(async () => http(`${peer.url}/step`, { timeoutMs: TIMEOUT_MS })(ctx), GUARD_MS)
    expect(ended).toMatch(
      /^rejected: action of "b1": POST .* (failed|answered 200 but its body was cut off) \(timed out\)/,
    )
  })

  it('a DTM branch call times out', async () => {
    const call = {
      url: `${peer.url}/step`,
      gid: 'g1',
      transType: 'saga',
      branchId: '01',
      op: 'action',
      payload: '{}',
      headers: {},
      timeoutMs: TIMEOUT_MS,
      signal: live,
    } as const
    const ended = await underCollection(() => callDtmBranch(call), GUARD_MS)
    expect(ended).toMatch(
      /^rejected: action of branch 01: POST .* (failed|answered 200 but its body was cut off) \(timed out\)/,
    )
  })

  it("a notification's delivery and reconciliation time out", async () => {
    const n: NotifyInput = {
      url: `${peer.url}/notify`,
      body: {},
      schedule: [],
      reconcile: `${peer.url}/reconcile`,
      headers: {},
      timeoutMs: TIMEOUT_MS,
    }
    // A 2xx is a delivery even if its body is cut off: the receiver said yes. A reconciliation's body says whether
    // it has the notification, so a cut-off one is no answer.
    const delivered = await underCollection(() => deliver(n, 'g1', live), GUARD_MS)
    expect(delivered).toBe(headersOnly ? 'answered' : `rejected: POST ${n.url} failed (timed out)`)
    const asked = await underCollection(
      () => reconcile({ ...n, reconcile: `${peer.url}/reconcile` }, 'g1', live),
      GUARD_MS,
    )
    expect(asked).toBe(
      `rejected: reconcile POST ${peer.url}/reconcile ${headersOnly ? 'answered 200 but its body was cut off' : 'failed'} (timed out)`,
    )
  })

  it('a check-back URL times out (its fixed 3 s deadline)', async () => {
    const ask = checkBackOf(`${peer.url}/check`, 'msg', 'latchkey_tx_msg')
    const ended = await underCollection(() => ask('g1', live), GUARD_MS)
    expect(ended).toMatch(
      /^rejected: msg check-back: GET .* (failed|answered 200 but its body was cut off) \(timed out\)/,
    )
  })
})

it("the caller's abort still ends a call at once, and no listener is left on the caller's signal", async () => {
  const peer = await silentPeer(false)
  try {
    const caller = new AbortController()
    let listeners = 0
    const add = caller.signal.addEventListener.bind(caller.signal)
    const remove = caller.signal.removeEventListener.bind(caller.signal)
    caller.signal.addEventListener = ((...args: Parameters<typeof add>) => {
      listeners++
      add(...args)
    }) as typeof add
    caller.signal.removeEventListener = ((...args: Parameters<typeof remove>) => {
      listeners--
      remove(...args)
    }) as typeof remove
    const ctx = { gid: 'g2', branch: 'b2', op: 'action', input: {}, attempt: 1, signal: caller.signal } as BranchContext
    const call = Promise.resolve(http(`${peer.url}/step`, { timeoutMs: 60_000 })(ctx))
    caller.abort(new Error('lease lost'))
    await expect(call).rejects.toThrow(/POST .* failed/)
    expect(listeners).toBe(0)
  } finally {
    await peer.close()
  }
})
