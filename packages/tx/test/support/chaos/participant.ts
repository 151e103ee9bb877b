/**
 * A bank's participant service for the chaos test, run as a child process:
 * `participant.ts <dialect> <tablePrefix> <port> <seed> <name>`. fastify + the latchkey-tx participant plugin +
 * the barrier, on the bank's own database (tables created by the test). Routes `/out` (debit the payer; its
 * compensation credits back) and `/in` (credit the payee; its compensation debits). It injects seeded faults
 * (409, 425, 5xx, slow answers that outlive the coordinator's timeout, before or after the commit) and prints
 * `fault <kind>` for each, and `listening <port>` once ready. `POST /chaos/calm` stops the faults.
 */
import Fastify from 'fastify'
import { BranchFailure, type BranchHandler, BranchOngoing, txParticipant } from '../../../src/fastify/index.js'
import type { Dialect } from '../databases.js'
import { openLedgerDb } from './ledger-db.js'
import { type Fault, faultFor } from './seeded.js'

const [dialect, prefix, portArg, seedArg, name] = process.argv.slice(2)
if (
  dialect === undefined ||
  prefix === undefined ||
  portArg === undefined ||
  seedArg === undefined ||
  name === undefined
) {
  throw new Error('usage: participant.ts <dialect> <tablePrefix> <port> <seed> <name>')
}
// Never outlive a test that forgot to kill us.
setTimeout(() => process.exit(3), 10 * 60_000).unref()
const seed = Number(seedArg)
/** Longer than the coordinator's HTTP timeout: the call times out on the coordinator's side and is retried. */
const SLOW_MS = 700
const ledger = openLedgerDb(dialect as Dialect, prefix)
const calls = new Map<string, number>()
let calm = false
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

export interface TransferInput {
  readonly from: number
  readonly to: number
  readonly amount: number
}

function draw(gid: string, branch: string, op: string): Fault | undefined {
  if (calm) return undefined
  const key = `${gid}/${branch}/${op}`
  const n = (calls.get(key) ?? 0) + 1
  calls.set(key, n)
  const fault = faultFor(seed, name as string, `${gid}/${branch}`, op, n)
  if (fault !== undefined) process.stdout.write(`fault ${fault}\n`)
  return fault
}

/** A handler moving `sign * amount` on the payer (`/out`) or payee (`/in`); a debit of a forward op is guarded. */
const move =
  (account: 'from' | 'to', sign: 1 | -1, guarded: boolean): BranchHandler<TransferInput> =>
  async (trx, call) => {
    const fault = draw(call.gid, call.branch, call.op)
    ;(call.request as { fault?: Fault | undefined }).fault = fault
    if (fault === 'refuse') throw new BranchFailure('refused by the chaos schedule')
    if (fault === 'ongoing') throw new BranchOngoing('still working (chaos)')
    if (fault === 'error') throw new Error('participant error (chaos)')
    if (fault === 'slow') await sleep(SLOW_MS) // inside the local transaction: its locks are held meanwhile
    const e = {
      gid: call.gid,
      branch: call.branch,
      op: call.op,
      id: call.input[account],
      delta: sign * call.input.amount,
    }
    const applied = await ledger.apply(trx, e, guarded)
    if (!applied) throw new BranchFailure('insufficient funds')
    return { balanceMoved: e.delta }
  }

const app = Fastify({ logger: false })
// Faults after the commit: the effect is durable but the coordinator sees a 5xx or a timeout and calls again.
app.addHook('onSend', async (request, reply, payload) => {
  const fault = (request as { fault?: Fault }).fault
  if (reply.statusCode !== 200) return payload
  if (fault === 'error-after') reply.code(500)
  if (fault === 'slow-after') await sleep(SLOW_MS)
  return payload
})
app.post('/chaos/calm', async () => {
  calm = true
  return { calm }
})
await app.register(txParticipant, {
  db: ledger.db,
  barrierTable: ledger.tables.barrier,
  createTable: false,
  routes: {
    '/out': { action: move('from', -1, true), compensate: move('from', 1, false) },
    '/in': { action: move('to', 1, false), compensate: move('to', -1, false) },
  },
})
const address = await app.listen({ port: Number(portArg), host: '127.0.0.1' })
process.stdout.write(`listening ${new URL(address).port}\n`)
