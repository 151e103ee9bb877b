/**
 * One lab client process: loops acquire -> read the referee's register -> work -> check -> write value + 1 ->
 * exit -> release, logging every step to its own JSON-lines history, until the runner says stop.
 */
import { nowMs, sleep } from '../lib/clock.js'
import { HistoryWriter } from '../lib/history.js'
import type { ClientConfig, ClientRequest, Ping, Pong, RunnerReply, StopMessage } from '../lib/protocol.js'
import { seededRng } from '../lib/rng.js'
import { STRATEGIES } from './strategies.js'
import type { Held } from './strategy.js'

type Body = ClientRequest extends infer R ? (R extends { id: number } ? Omit<R, 'id'> : never) : never

const config = JSON.parse(process.argv[2] ?? '{}') as ClientConfig
const history = new HistoryWriter(config.historyPath, config.proc)
const rng = seededRng(config.seed)
const pending = new Map<number, (reply: RunnerReply) => void>()
let nextId = 1
let stopping = false

process.on('message', (message: RunnerReply | StopMessage | Ping) => {
  if (!('kind' in message)) pending.get(message.id)?.(message)
  else if (message.kind === 'ping') process.send?.({ kind: 'pong', id: message.id } satisfies Pong)
  else stopping = true
})

function request(body: Body): Promise<RunnerReply> {
  const id = nextId++
  return new Promise((resolve) => {
    pending.set(id, (reply) => {
      pending.delete(id)
      resolve(reply)
    })
    process.send?.({ ...body, id })
  })
}

const WRITE_TIMEOUT_MS = Math.max(200, Math.round(config.ttlMs / 2))
const point = async (name: string): Promise<void> => void (await request({ kind: 'point', name }))
const make = STRATEGIES[config.strategy]
if (make === undefined) throw new RangeError(`lab client: unknown strategy ${JSON.stringify(config.strategy)}`)
const strategy = await make({ config, history, point })

async function criticalSection(held: Held): Promise<void> {
  const token = held.token.toString()
  history.log('invoke', 'read', { token })
  const read = await request({ kind: 'read', token, ...(held.session === undefined ? {} : { session: held.session }) })
  history.log(read.accepted ? 'ok' : 'fail', 'read', { token, value: read.value ?? -1 })
  // A long synchronous computation: nothing else of this process runs (timers, renewals, replies) until it ends.
  if (read.starveMs !== undefined) Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, read.starveMs)
  if (!read.accepted) return
  await sleep(read.workMs ?? rng.int(config.csMs[0], config.csMs[1]))
  if (!(await held.stillValid())) {
    history.log('info', 'skip-write', { token, error: 'no longer valid before writing' })
    return
  }
  await point('in-cs')
  const value = (read.value ?? 0) + 1
  history.log('invoke', 'write', { token, value })
  // A write that gets no answer in time is indeterminate (info): it may still land, which is the delay-write fault.
  const write = await Promise.race([request({ kind: 'write', token, value }), sleep(WRITE_TIMEOUT_MS)])
  if (write === undefined) history.log('info', 'write', { token, value, error: 'no answer, outcome unknown' })
  else history.log(write.accepted ? 'ok' : 'fail', 'write', { token, value })
}

while (!stopping) {
  await point('acquire')
  history.log('invoke', 'acquire')
  let held: Held
  try {
    held = await strategy.acquire()
  } catch (error) {
    history.log('fail', 'acquire', { error: String(error) })
    continue
  }
  const token = held.token.toString()
  history.log('ok', 'acquire', { token })
  held.signal?.addEventListener('abort', () => history.log('info', 'lost', { token }), { once: true })
  try {
    await criticalSection(held)
  } finally {
    await request({ kind: 'exit' })
  }
  history.log('invoke', 'release', { token })
  try {
    await held.release()
    history.log('ok', 'release', { token })
  } catch (error) {
    history.log('fail', 'release', { token, error: String(error) })
  }
}

const closing = nowMs()
await Promise.race([strategy.close(), sleep(3_000)])
history.log('info', 'closed', { value: Math.round(nowMs() - closing) })
process.exit(0)
