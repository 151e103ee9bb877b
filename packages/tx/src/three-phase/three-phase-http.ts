import type { IncomingMessage, ServerResponse } from 'node:http'
import { isTxError } from '../errors.js'
import { type HttpBranchOptions, http } from '../http/http-branch.js'
import type { ThreePhaseParticipantHandle } from './participant-types.js'
import type { ThreePhaseParticipant } from './three-phase.js'

/**
 * A 3PC participant over HTTP, for `tc.threePhase`: the four operations POST `{ gid, branch, op, input }` to one
 * URL (the `op` field tells them apart) with DTM's result codes, as `http()` does. Serve it with
 * {@link threePhaseListener}.
 *
 * @example
 * tc.threePhase('transfer', { a: threePhaseHttp('http://bank-a/3pc'), b: threePhaseHttp('http://bank-b/3pc') })
 */
export function threePhaseHttp<I = unknown>(url: string, options: HttpBranchOptions = {}): ThreePhaseParticipant<I> {
  const op = http<I>(url, options)
  return { canCommit: op, preCommit: op, doCommit: op, abort: op }
}

const MAX_BODY = 1 << 20

/**
 * A `node:http` request listener for a participant: reads the JSON message, answers 200 with the participant's
 * state (`{ state, decidedBy }`), 409 for a refusal (a no vote, a preCommit it cannot take), 400 for a malformed
 * message, 503 / 500 for an error (the coordinator retries or counts it as no answer).
 *
 * @example
 * createServer(threePhaseListener(participant)).listen(8081)
 */
export function threePhaseListener<I>(participant: ThreePhaseParticipantHandle<I>) {
  return (req: IncomingMessage, res: ServerResponse): void => {
    const chunks: Buffer[] = []
    let size = 0
    req.on('data', (chunk: Buffer) => {
      size += chunk.length
      if (size <= MAX_BODY) chunks.push(chunk)
    })
    req.on('end', () => {
      void answer(participant, size > MAX_BODY ? undefined : Buffer.concat(chunks).toString('utf8'), res)
    })
  }
}

async function answer<I>(
  participant: ThreePhaseParticipantHandle<I>,
  body: string | undefined,
  res: ServerResponse,
): Promise<void> {
  const send = (status: number, value: unknown) =>
    res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(value))
  let message: unknown
  try {
    if (body === undefined) throw new RangeError('body over 1 MiB')
    message = JSON.parse(body)
  } catch (error) {
    send(400, { dtm_result: 'FAILURE', message: `not a JSON 3PC message: ${String(error)}` })
    return
  }
  try {
    send(200, await participant.handle(message as Parameters<typeof participant.handle>[0]))
  } catch (error) {
    const text = error instanceof Error ? error.message : String(error)
    if (error instanceof TypeError || error instanceof RangeError) send(400, { dtm_result: 'FAILURE', message: text })
    else if (isTxError(error) && error.code === 'TX_3PC_REFUSED') send(409, { dtm_result: 'FAILURE', message: text })
    else send(isTxError(error) && error.retryable ? 503 : 500, { message: text })
  }
}
