/**
 * The statements one global transaction sends to the coordinator's log (PostgreSQL or MariaDB): what
 * `tx-bench.ts` counts, line by line.
 *
 *   npx tsx bench/tx-trace.ts [postgres|mariadb] [saga|tcc]
 */
import { randomBytes } from 'node:crypto'
import { createCoordinator } from 'latchkey-tx'
import { openLog } from './lib/tx-log.js'
import { type DbKind, openParticipant } from './lib/tx-participant.js'
import { defineOps, type Protocol } from './lib/tx-workload.js'

const db = (process.argv[2] ?? 'postgres') as DbKind
const protocol = (process.argv[3] ?? 'saga') as Protocol
const suffix = randomBytes(4).toString('hex')
const participant = await openParticipant(db, suffix, 4)
const log = await openLog(db, suffix, 4)
const tc = createCoordinator({ store: log.store, recover: false })
try {
  const ops = defineOps(tc, participant, { writes: 2, barrier: true })
  await ops[protocol]() // creates the tables: not part of the trace
  log.tally.trace = []
  await ops[protocol]()
  console.log(log.tally.trace.map((line, i) => `${String(i + 1).padStart(2)} ${line}`).join('\n'))
} finally {
  await tc.close()
  await log.close()
  await participant.close()
}
