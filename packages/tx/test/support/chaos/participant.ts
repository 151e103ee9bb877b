/**
 * A bank's participant service for the chaos test, run as a child process:
 * `participant.ts <dialect> <tablePrefix> <port> <seed> <name>`. fastify + the latchkey-tx participant plugin +
 * the barrier, on the bank's own database (tables created by the test). Routes `/out` (debit the payer; its
 * compensation credits back) and `/in` (credit the payee; its compensation debits), and `/tcc-out`, `/tcc-in` for the TCC transfer. It injects seeded faults
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

/**
 * A handler moving money on the payer (`from`) or payee (`to`) account: `bal` and `frozen` deltas in units of
 * the amount. A guarded move is refused (409) when the balance would go negative: only forward ops are guarded,
 * compensations, confirms and cancels must succeed.
 */
const move =
  (account: 'from' | 'to', bal: number, frozen: number, guarded = false): BranchHandler<TransferInput> =>
  async (trx, call) => {
    const fault = draw(call.gid, call.branch, call.op)
    ;(call.request as { fault?: Fault | undefined }).fault = fault
    if (fault === 'refuse') throw new BranchFailure('refused by the chaos schedule')
    if (fault === 'ongoing') throw new BranchOngoing('still working (chaos)')
    if (fault === 'error') throw new Error('participant error (chaos)')
    if (fault === 'slow') await sleep(SLOW_MS) // inside the local transaction: its locks are held meanwhile
    const { amount } = call.input
    const e = {
      gid: call.gid,
      branch: call.branch,
      op: call.op,
      id: call.input[account],
      delta: bal * amount,
      frozen: frozen * amount,
    }
    if (!(await ledger.apply(trx, e, guarded))) throw new BranchFailure('insufficient funds')
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
    // Saga: the payer's debit, undone by a credit; the payee's credit, undone by a debit.
    '/out': { action: move('from', -1, 0, true), compensate: move('from', 1, 0) },
    '/in': { action: move('to', 1, 0), compensate: move('to', -1, 0) },
    // TCC: try freezes the payer's amount, confirm lets it go, cancel unfreezes; the payee gets it on confirm.
    '/tcc-out': { try: move('from', -1, 1, true), confirm: move('from', 0, -1), cancel: move('from', 1, -1) },
    '/tcc-in': { try: move('to', 0, 0), confirm: move('to', 1, 0), cancel: move('to', 0, 0) },
  },
})
const address = await app.listen({ port: Number(portArg), host: '127.0.0.1' })
process.stdout.write(`listening ${new URL(address).port}\n`)
