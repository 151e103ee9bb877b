/**
 * A participant service written the way DTM participants are: it reads `gid`, `trans_type`, `branch_id` and
 * `op` from the query string and the branch payload from the body, and answers with DTM's codes. Each path's
 * answer is scripted by the test (default 200 `{"dtm_result":"SUCCESS"}`); every call is recorded.
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'

/** One call as the participant saw it. */
export interface ParticipantCall {
  readonly method: string
  readonly path: string
  readonly gid: string | null
  readonly transType: string | null
  readonly branchId: string | null
  readonly op: string | null
  readonly body: string
}

/** What a path answers: a status (and body), or `hang` (never answer: the caller is killed meanwhile). */
export type Answer = { status: number; body?: string } | 'hang'

export interface Participant {
  readonly base: string
  readonly calls: ParticipantCall[]
  /** Sets what `path` answers from now on. */
  answer(path: string, answer: Answer): void
  /** Runs `fn` (the business effect, e.g. inside DTM's barrier) on each call of `path`, before answering. */
  effect(path: string, fn: (call: ParticipantCall) => unknown): void
  /** Calls of `path` (optionally of one gid). */
  callsTo(path: string, gid?: string): ParticipantCall[]
  close(): Promise<void>
}

/** Starts a participant on a random local port. */
export async function startParticipant(): Promise<Participant> {
  const calls: ParticipantCall[] = []
  const answers = new Map<string, Answer>()
  const effects = new Map<string, (call: ParticipantCall) => unknown>()
  const hanging = new Set<ServerResponse>()
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    let body = ''
    req.on('data', (c: Buffer) => {
      body += c.toString('utf8')
    })
    req.on('end', async () => {
      const url = new URL(req.url ?? '/', 'http://localhost')
      const q = url.searchParams
      const call: ParticipantCall = {
        method: req.method ?? '',
        path: url.pathname,
        gid: q.get('gid'),
        transType: q.get('trans_type'),
        branchId: q.get('branch_id'),
        op: q.get('op'),
        body,
      }
      calls.push(call)
      try {
        await effects.get(url.pathname)?.(call)
      } catch (error) {
        res.writeHead(500).end(String(error))
        return
      }
      const answer = answers.get(url.pathname) ?? { status: 200 }
      if (answer === 'hang') {
        hanging.add(res)
        return
      }
      const text = answer.body ?? JSON.stringify({ dtm_result: answer.status === 200 ? 'SUCCESS' : 'FAILURE' })
      res.writeHead(answer.status, { 'content-type': 'application/json' }).end(text)
    })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
  return {
    base,
    calls,
    answer: (path, answer) => answers.set(path, answer),
    effect: (path, fn) => effects.set(path, fn),
    callsTo: (path, gid) => calls.filter((c) => c.path === path && (gid === undefined || c.gid === gid)),
    close: async () => {
      for (const res of hanging) res.destroy()
      server.closeAllConnections()
      await new Promise<void>((resolve) => server.close(() => resolve()))
    },
  }
}
