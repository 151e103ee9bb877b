/**
 * A producer process for the transactional-message crash tests:
 * `msg-producer.ts <dialect> <where> <prefix> <storeUrl> <gid> <run|hold>`. It sends one message `order-created`
 * whose local transaction inserts an order row. With `LATCHKEY_TX_CRASH_AT=msg:…` it kills itself there. With
 * `hold`, the local transaction prints `local-started` and waits for a line on stdin: `commit` or `rollback`.
 * Short lease and prepare timeout, so that a coordinator in the test process settles the message soon after.
 */
import { createInterface } from 'node:readline'
import { createCoordinator, type TxError } from '../../src/index.js'
import type { Dialect } from '../support/databases.js'
import { openProducerDb } from './producer-db.js'

const [dialect, where, prefix, storeUrl, gid, mode] = process.argv.slice(2)
if (
  dialect === undefined ||
  where === undefined ||
  prefix === undefined ||
  storeUrl === undefined ||
  gid === undefined
) {
  throw new Error('usage: msg-producer.ts <dialect> <where> <prefix> <storeUrl> <gid> <run|hold>')
}
// Never outlive a test that forgot to kill us.
setTimeout(() => process.exit(3), 30_000).unref()
const lines = createInterface({ input: process.stdin })[Symbol.asyncIterator]()
const p = openProducerDb(dialect as Dialect, { where, prefix })
const tc = createCoordinator({ store: storeUrl, recover: false, leaseTtlMs: 600, timeoutMs: 300 })
const msg = tc
  .msg('order-created', { barrierTable: p.barrierTable })
  .add(() => void process.stdout.write('branch-called\n'))
const outcome = await msg
  .doAndSubmit(
    p.db,
    async (trx) => {
      await p.insertOrder(trx, gid)
      if (mode !== 'hold') return 'ok'
      process.stdout.write('local-started\n')
      const line = (await lines.next()).value
      if (line !== 'commit') throw new Error(`told to ${line}`)
      return 'ok'
    },
    { gid, input: { gid } },
  )
  .then(
    (r) => `finished ${r.status}`,
    (e: TxError) => `rejected ${e.code ?? e.message}`,
  )
process.stdout.write(`${outcome}\n`)
await tc.close()
await p.close()
process.exit(0)
