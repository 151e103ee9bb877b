/**
 * A participant service process for the 3PC tests: `three-phase-service.ts <dbPath> <port> <timeoutMs>`. One
 * SQLite database (its own, as a real participant's would be) with an account `acct(bal, pending)` and an
 * `effects` log written in the same local transactions (the TCC participant's is `<dbPath>-tcc`); `POST /3pc` is a `threePhaseParticipant` (its state in
 * the same database, so it survives this process's SIGKILL), `POST /tcc` a TCC participant behind the barrier,
 * for the blocking contrast. The amount moved is `input.amounts[branch]`; `canCommit` votes no when
 * `input.refuse` names the branch. Prints `listening <port>`.
 */
import { createServer } from 'node:http'
import Database from 'better-sqlite3'
import { barrier, ensureBarrierTable } from '../../src/barrier/index.js'
import { type ThreePhaseContext, threePhaseListener, threePhaseParticipant } from '../../src/index.js'

const [dbPath, port, timeoutMs] = process.argv.slice(2)
if (dbPath === undefined || port === undefined || timeoutMs === undefined) {
  throw new Error('usage: three-phase-service.ts <dbPath> <port> <timeoutMs>')
}
// Never outlive a test that forgot to kill us.
setTimeout(() => process.exit(3), 600_000).unref()

type Input = { amounts: Record<string, number>; refuse?: string }

/** One bank database: the 3PC participant and the TCC one each have their own (one connection each). */
function bank(path: string) {
  const db = new Database(path)
  db.pragma('journal_mode = WAL')
  db.pragma('busy_timeout = 5000')
  db.exec('CREATE TABLE IF NOT EXISTS acct (id INTEGER PRIMARY KEY, bal INTEGER NOT NULL, pending INTEGER NOT NULL)')
  db.exec('INSERT OR IGNORE INTO acct VALUES (1, 100, 0)')
  db.exec('CREATE TABLE IF NOT EXISTS effects (gid TEXT, branch TEXT, op TEXT, by TEXT)')
  return {
    db,
    effect: (ctx: { gid: string; branch: string }, op: string, by = 'coordinator') =>
      db.prepare('INSERT INTO effects VALUES (?, ?, ?, ?)').run(ctx.gid, ctx.branch, op, by),
    hold: (n: number) => db.prepare('UPDATE acct SET pending = pending + ? WHERE id = 1').run(n),
    apply: (n: number) => db.prepare('UPDATE acct SET bal = bal + ?, pending = pending - ? WHERE id = 1').run(n, n),
  }
}
const amount = (ctx: { branch: string; input: Input }) => ctx.input.amounts[ctx.branch] ?? 0
const { db, effect, hold, apply } = bank(dbPath)
const tccBank = bank(`${dbPath}-tcc`)
await ensureBarrierTable(tccBank.db)

const participant = threePhaseParticipant<Input>({
  db,
  timeoutMs: Number(timeoutMs),
  checkEveryMs: 50,
  canCommit: (_trx, ctx) => ctx.input.refuse !== ctx.branch,
  preCommit: (_trx, ctx: ThreePhaseContext<Input>) => {
    hold(amount(ctx))
    effect(ctx, 'preCommit')
  },
  doCommit: (_trx, ctx) => {
    apply(amount(ctx))
    effect(ctx, 'doCommit', ctx.by)
  },
  abort: (_trx, ctx) => {
    hold(-amount(ctx))
    effect(ctx, 'abort')
  },
})
await participant.start()
const on3pc = threePhaseListener(participant)

/** The TCC participant: try holds, confirm applies, cancel releases; the barrier makes each happen once. */
async function tcc(body: string): Promise<number> {
  const { gid, branch, op, input } = JSON.parse(body) as { gid: string; branch: string; op: string; input: Input }
  const n = amount({ branch, input })
  const { db: tdb } = tccBank
  tdb.exec('BEGIN IMMEDIATE')
  try {
    await barrier(tdb, { gid, branch, op }, () => {
      if (op === 'try') tccBank.hold(n)
      else if (op === 'confirm') tccBank.apply(n)
      else tccBank.hold(-n)
      tccBank.effect({ gid, branch }, op)
    })
    tdb.exec('COMMIT')
    return 200
  } catch {
    tdb.exec('ROLLBACK')
    return 500
  }
}

const server = createServer((req, res) => {
  if (req.url === '/3pc') return on3pc(req, res)
  let body = ''
  req.on('data', (c) => {
    body += c
  })
  req.on('end', () => {
    void tcc(body).then((status) => res.writeHead(status).end())
  })
})
server.listen(Number(port), '127.0.0.1', () => {
  const address = server.address()
  process.stdout.write(`listening ${typeof address === 'object' && address !== null ? address.port : port}\n`)
})
