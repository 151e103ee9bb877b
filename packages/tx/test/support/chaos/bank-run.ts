/**
 * One seeded run of the bank-transfer chaos test: two banks (PostgreSQL and MariaDB), each behind its own
 * participant process, a coordinator process on a SQLite log, transfers (sagas and TCCs, both directions)
 * submitted continuously, and a seeded
 * schedule of SIGKILLs (coordinator restarted on the same log, participants restarted on the same port) on top of
 * the participants' seeded 409/425/5xx/slow answers. Then: let recovery finish, record what was parked, calm
 * the participants, retry the parked, and check the invariants.
 */
import { randomBytes } from 'node:crypto'
import { createServer } from 'node:net'
import { type Coordinator, createCoordinator, type TxRecord } from '../../../src/index.js'
import { tempDir } from '../databases.js'
import { eventually } from '../eventually.js'
import { checkInvariants, type Transfer } from './invariants.js'
import { type LedgerDb, openLedgerDb } from './ledger-db.js'
import { type Child, kill, killAll, start } from './processes.js'
import { chance, pick } from './seeded.js'

export interface ChaosOptions {
  readonly seed: number
  /** Transfers submitted. Default 30. */
  readonly transfers?: number
  /** Transfers in flight before the next is submitted. Default 6. */
  readonly window?: number
  /** Half of the transfers as TCC instead of sagas. Default true. */
  readonly tcc?: boolean
}

export interface ChaosReport {
  readonly seed: number
  readonly ms: number
  readonly submitted: number
  /** How many of the submitted were TCC transfers (the rest sagas). */
  readonly tcc: number
  readonly succeeded: number
  readonly failed: number
  /** Parked (each with its reason) once recovery had settled, before the participants were calmed and retried. */
  readonly parked: number
  readonly kills: { coordinator: number; a: number; b: number }
  readonly faults: Record<string, number>
  readonly violations: string[]
}

const ACCOUNTS = [1, 2, 3]
const PER_ACCOUNT = 500
const UNFINISHED = new Set(['prepared', 'submitted', 'aborting'])

async function freePort(): Promise<number> {
  const server = createServer()
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const port = (server.address() as { port: number }).port
  await new Promise((resolve) => server.close(resolve))
  return port
}

/** The run's kill schedule: after which submission each kill (and each participant's restart) happens. */
function schedule(seed: number, n: number) {
  const coordinatorKills = new Set([pick(seed, 2, n - 2, 'ckill', 0), pick(seed, 2, n - 2, 'ckill', 1)])
  const participant = (name: string) => {
    if (chance(seed, 'pkill?', name) < 0.2) return undefined
    const at = pick(seed, 1, n - 2, 'pkill', name)
    return { at, restartAt: Math.min(n - 1, at + pick(seed, 0, 3, 'prestart', name)) }
  }
  return { coordinatorKills, a: participant('A'), b: participant('B') }
}

export async function runChaos(options: ChaosOptions): Promise<ChaosReport> {
  const { seed, transfers: n = 30, window = 6, tcc = true } = options
  const began = Date.now()
  const run = randomBytes(3).toString('hex')
  const tmp = tempDir()
  const storeUrl = `sqlite:${tmp.dir}/tx.db`
  const banks = { a: openLedgerDb('postgres', `lch_${run}_a_`), b: openLedgerDb('mysql', `lch_${run}_b_`) }
  const faults: Record<string, number> = {}
  const kills = { coordinator: 0, a: 0, b: 0 }
  const countFault = (line: string) => {
    if (process.env.CHAOS_DEBUG) console.log(line)
    if (line.startsWith('fault ')) faults[line.slice(6)] = (faults[line.slice(6)] ?? 0) + 1
  }
  let reader: Coordinator | undefined
  try {
    const initial = Object.fromEntries(ACCOUNTS.map((id) => [id, PER_ACCOUNT]))
    await banks.a.create(initial)
    await banks.b.create(initial)
    const ports = { a: await freePort(), b: await freePort() }
    const startBank = async (side: 'a' | 'b', bank: LedgerDb) =>
      (
        await start(
          'participant.ts',
          [bank.dialect, bank.tables.acct.slice(0, -4), String(ports[side]), String(seed), side.toUpperCase()],
          'listening',
          countFault,
        )
      ).child
    const participants: Record<'a' | 'b', Child | undefined> = {
      a: await startBank('a', banks.a),
      b: await startBank('b', banks.b),
    }
    const url = (side: 'a' | 'b') => `http://127.0.0.1:${ports[side]}`
    const startCoordinator = async () => (await start('coordinator.ts', [storeUrl, url('a'), url('b')], 'ready')).child
    let coordinator = await startCoordinator()
    reader = createCoordinator({ store: storeUrl, recover: false })
    const r = reader
    const plan = schedule(seed, n)
    const sent: Transfer[] = []
    const settled = async (gid: string) => {
      const tx = await r.get(gid)
      return tx === undefined || !UNFINISHED.has(tx.status)
    }

    for (let i = 0; i < n; i++) {
      const previous = sent[i - window]
      // Pacing only: keep a bounded number in flight; a stuck transfer (a participant down) does not stop the run.
      if (previous !== undefined) await eventually(() => settled(previous.gid), 3_000).catch(() => undefined)
      const direction = chance(seed, 'dir', i) < 0.5 ? 'ab' : 'ba'
      const kind = tcc && chance(seed, 'kind', i) < 0.5 ? (`tcc-${direction}` as const) : direction
      const input = {
        from: pick(seed, 1, 3, 'from', i),
        to: pick(seed, 1, 3, 'to', i),
        amount: pick(seed, 1, 300, 'amount', i),
      }
      const gid = `chaos-${seed}-${i}`
      sent.push({ gid, kind, amount: input.amount })
      const answer = coordinator.waitFor((line) => line.endsWith(` ${gid}`) || line.includes(` ${gid} `), 15_000)
      coordinator.send(JSON.stringify({ cmd: 'submit', gid, kind, input }))
      const line = await answer
      if (!line.startsWith('submitted ')) throw new Error(`seed ${seed}: ${line}`)
      if (plan.coordinatorKills.has(i)) {
        await kill(coordinator)
        kills.coordinator++
        coordinator = await startCoordinator()
      }
      for (const side of ['a', 'b'] as const) {
        const p = plan[side]
        if (p?.at === i && participants[side] !== undefined) {
          await kill(participants[side] as Child)
          participants[side] = undefined
          kills[side]++
        }
        if (p?.restartAt === i && participants[side] === undefined) {
          participants[side] = await startBank(side, banks[side])
        }
      }
    }
    for (const side of ['a', 'b'] as const) participants[side] ??= await startBank(side, banks[side])

    const all = async () =>
      Promise.all((await r.list({ limit: 10_000 })).map(async (s) => (await r.get(s.gid)) as TxRecord))
    await eventually(async () => (await r.list({ limit: 10_000 })).every((t) => !UNFINISHED.has(t.status)), 90_000, 100)
    const parked = (await all()).filter((t) => t.status === 'parked')
    const violations = parked.filter((t) => !t.error).map((t) => `${t.gid} parked without a reason`)
    if (process.env.CHAOS_DEBUG)
      for (const t of parked) console.log(`parked ${t.gid} (${t.kind} from ${t.parkedFrom}): ${t.error}`)
    for (const side of ['a', 'b'] as const) await fetch(`${url(side)}/chaos/calm`, { method: 'POST' })
    if (parked.length > 0) {
      const retried = coordinator.waitFor((line) => line.startsWith('retried '))
      coordinator.send(JSON.stringify({ cmd: 'retry-parked' }))
      await retried
    }
    const finished = await eventually(
      async () => {
        const records = await all()
        return records.every((t) => t.status === 'succeeded' || t.status === 'failed') && records
      },
      90_000,
      100,
    ).catch(async () => all())
    violations.push(...(await checkInvariants(banks, ACCOUNTS.length * PER_ACCOUNT, sent, finished)))
    const count = (status: string) => finished.filter((t) => t.status === status).length
    return {
      seed,
      ms: Date.now() - began,
      submitted: finished.length,
      tcc: finished.filter((t) => t.kind === 'tcc').length,
      succeeded: count('succeeded'),
      failed: count('failed'),
      parked: parked.length,
      kills,
      faults,
      violations,
    }
  } finally {
    await killAll()
    await reader?.close()
    await banks.a.close(true)
    await banks.b.close(true)
    tmp.remove()
  }
}
