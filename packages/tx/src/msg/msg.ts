import { randomUUID } from 'node:crypto'
import { DEFAULT_BARRIER_TABLE } from '../barrier/barrier-sql.js'
import { type BranchFn, checkBranchFn, checkId } from '../branch.js'
import { sleep } from '../coordinator/backoff.js'
import { checkRunOptions } from '../coordinator/checks.js'
import type { TxDefinition } from '../coordinator/definition.js'
import { StopDriving } from '../coordinator/drive-errors.js'
import type { RunResult, Starter } from '../coordinator/run-result.js'
import type { TxRun } from '../coordinator/tx-run.js'
import { TxError } from '../errors.js'
import { checkPrefix } from '../store/schema.js'
import { type AskCheckBack, type CheckBack, checkBackOf } from './check-back.js'
import { runLocalTransaction } from './local-transaction.js'
import { producerKind } from './producer-db.js'
import { type LocalOutcome, queryPrepared } from './query-prepared.js'

/** Options of `tc.msg(name, options)`. */
export interface MsgOptions {
  /**
   * How a coordinator that finds the message still `prepared` past `timeoutMs` (its producer died between the
   * local commit and the submit) learns the local transaction's outcome: the producer's database, a URL or a
   * function ({@link CheckBack}). Default: the database last given to `doAndSubmit` in this process. A
   * coordinator in another process needs it to settle this process's messages.
   */
  checkBack?: CheckBack
  /** The barrier table in the producer's database. Default `latchkey_tx_barrier` (created when missing). */
  barrierTable?: string
}

/** Options of `doAndSubmit`. */
export interface MsgSubmitOptions<I = unknown> {
  /** The global transaction id. Default: a random UUID. */
  gid?: string
  /** What every branch receives as `ctx.input` (stored in the log at prepare). */
  input?: I
  /** Resolve after every branch succeeded (or the message parked) instead of once it is submitted. Default false. */
  wait?: boolean
}

/** What `doAndSubmit` resolves to: the run's outcome and the local function's result. */
export interface MsgResult<T> extends RunResult {
  readonly local: T | undefined
}

/**
 * A transactional message (DTM's two-phase message): `prepare` is logged, the local transaction commits the
 * business writes together with a barrier row, then `submit` is logged and the coordinator calls every branch
 * until it succeeds (no compensation: a message, once its local transaction committed, must be delivered).
 */
export interface Msg<I = unknown> {
  readonly name: string
  /** Adds a branch (ids `01`, `02`, … in order unless given). Define every branch before the first message. */
  add(branch: BranchFn<I>, options?: { id?: string }): Msg<I>
  /**
   * Prepares the message, runs `local` in a transaction on `db` (a pg Pool, mysql2 pool or better-sqlite3
   * Database) after inserting its barrier row, commits, submits. Rejects with `local`'s error (the message is
   * then settled as rolled back); a process that dies before the submit leaves it to the check-back.
   */
  doAndSubmit<Trx extends object = object, T = unknown>(
    db: object,
    local: (trx: Trx) => T | Promise<T>,
    options?: MsgSubmitOptions<I>,
  ): Promise<MsgResult<T>>
}

/** The local transaction a `doAndSubmit` in this process hands to its transaction's drive. */
interface Gate {
  readonly db: object
  readonly local: (trx: object) => unknown
  /** What `local` returned. */
  value: unknown
  /** Why the local transaction failed (or its commit's outcome is unknown). */
  error: unknown
  readonly onSubmitted: () => void
}

interface Branch {
  readonly id: string
  readonly fn: BranchFn
}

/** The pseudo-branch that records the check-back calls. */
const LOCAL = 'local'

/** Builds a transactional message and registers its definition with the coordinator. */
export function createMsg<I>(
  name: string,
  options: MsgOptions,
  start: Starter,
  register: (def: TxDefinition) => void,
): Msg<I> {
  checkId('msg name', name)
  if (typeof options !== 'object' || options === null) {
    throw new TypeError(`latchkey-tx: msg "${name}" options must be an object { checkBack?, barrierTable? }`)
  }
  const table = options.barrierTable === undefined ? DEFAULT_BARRIER_TABLE : checkPrefix(options.barrierTable)
  const configured =
    options.checkBack === undefined ? undefined : checkBackOf(options.checkBack, `msg "${name}"`, table)
  let lastDb: object | undefined
  const askCheckBack: AskCheckBack = (gid, signal) => {
    const ask = configured ?? (lastDb === undefined ? undefined : checkBackOf(lastDb, `msg "${name}"`, table))
    if (ask === undefined) {
      throw new TxError(
        `msg "${name}" ${gid} needs a check-back: pass tc.msg("${name}", { checkBack }) (its database, a URL or a function)`,
        { code: 'NO_CHECK_BACK', gid, retryable: true },
      )
    }
    return ask(gid, signal)
  }
  const branches: Branch[] = []
  const gates = new Map<string, Gate>()
  let started = false
  const def: TxDefinition = {
    kind: 'msg',
    name,
    branches: () => [
      { id: LOCAL, op: 'check-back' as const, seq: 0 },
      ...branches.map((b, i) => ({ id: b.id, op: 'action' as const, seq: i + 1 })),
    ],
    knows: (ids) => ids.every((id) => id === LOCAL || branches.some((b) => b.id === id)),
    drive: (run) => driveMsg(run, branches, gates.get(run.gid), askCheckBack, table),
  }
  register(def)
  const msg: Msg<I> = {
    name,
    add(branch, addOptions = {}) {
      if (started) throw new TypeError(`latchkey-tx: msg "${name}": add every branch before the first doAndSubmit()`)
      const id = addOptions.id ?? String(branches.length + 1).padStart(2, '0')
      checkId(`msg "${name}" branch id`, id)
      if (id === LOCAL || branches.some((b) => b.id === id)) {
        throw new RangeError(`latchkey-tx: msg "${name}" already has a branch "${id}"`)
      }
      branches.push({ id, fn: checkBranchFn(`msg "${name}" branch "${id}"`, branch) })
      return msg
    },
    async doAndSubmit<Trx extends object, T>(
      db: object,
      local: (trx: Trx) => T | Promise<T>,
      submitOptions: MsgSubmitOptions<I> = {},
    ): Promise<MsgResult<T>> {
      producerKind(db, `msg "${name}" doAndSubmit`)
      if (typeof local !== 'function') throw new TypeError(`latchkey-tx: msg "${name}" doAndSubmit needs (trx) => …`)
      if (branches.length === 0) throw new TypeError(`latchkey-tx: msg "${name}" has no branches: add() one first`)
      const { gid = randomUUID(), wait = false } = checkRunOptions(submitOptions, submitOptions.input)
      if (gates.has(gid)) {
        throw new TxError(`Message ${gid} is being sent by this process already`, { code: 'DUPLICATE_GID', gid })
      }
      started = true
      lastDb = db
      let onSubmitted!: () => void
      const submitted = new Promise<undefined>((resolve) => {
        onSubmitted = () => resolve(undefined)
      })
      const gate: Gate = {
        db,
        local: local as (trx: object) => unknown,
        value: undefined,
        error: undefined,
        onSubmitted,
      }
      gates.set(gid, gate)
      try {
        const done = start(def, submitOptions.input ?? null, { gid, wait: true }, true)
        done.catch(() => undefined)
        // Not waiting: resolve as soon as the submit is durable; the drive goes on in the background.
        const result = wait ? await done : await Promise.race([done, submitted])
        if (result === undefined) return { gid, status: 'submitted', results: {}, local: gate.value as T }
        if (gate.error !== undefined && result.status !== 'submitted' && result.status !== 'succeeded') {
          throw gate.error
        }
        return { ...result, local: gate.value as T | undefined }
      } finally {
        gates.delete(gid)
      }
    },
  }
  return msg
}

async function driveMsg(
  run: TxRun,
  branches: readonly Branch[],
  gate: Gate | undefined,
  askCheckBack: AskCheckBack,
  table: string,
): Promise<void> {
  if (run.status === 'prepared') {
    // The process that prepared it runs the local transaction; a recovering coordinator asks the check-back.
    if (gate !== undefined && run.branch(LOCAL, 'check-back').attempts === 0) await runLocal(run, gate, table)
    else await checkBackAfterDeadline(run, askCheckBack)
  }
  if (run.status === 'submitted') {
    gate?.onSubmitted()
    // Like a saga's forward phase without compensation: each branch is called until it succeeds, then parked.
    for (const b of branches) {
      if (run.branch(b.id, 'action').status !== 'succeeded') await run.call(b.id, 'action', b.fn, false)
    }
    await run.transition('succeeded')
    return
  }
  // `tc.abort` of a message parked while delivering: a human gave up on the branches not delivered yet.
  if (run.status === 'aborting') await run.transition('failed', {}, 'delivery given up by tc.abort()')
}

async function runLocal(run: TxRun, gate: Gate, table: string): Promise<void> {
  try {
    await runLocalTransaction(gate.db, run.gid, table, gate.local, (value) => {
      gate.value = value
    })
  } catch (error) {
    gate.error = error
    // Failed, or its COMMIT's outcome is unknown: ask the database. Rolled back is then final (the check-back's
    // row forbids a late commit), so the message fails without waiting for the timeout.
    await settle(run, await checkBack(run, (gid) => queryPrepared(gate.db, gid, { table })))
    return
  }
  await run.transition('submitted', {}, 'the local transaction committed')
}

/** A recovering coordinator waits for the prepare timeout (the producer may still be working), then asks. */
async function checkBackAfterDeadline(run: TxRun, ask: AskCheckBack): Promise<void> {
  const wait = (run.record.deadlineAt ?? 0) - Date.now()
  if (wait > 0) {
    try {
      await sleep(wait, run.signal)
    } catch {
      throw new StopDriving('lease lost or coordinator closing')
    }
  }
  await settle(run, await checkBack(run, (gid, signal) => ask(gid, signal)))
}

/** One check-back, as the `local/check-back` branch: retried with backoff while it cannot answer, then parked. */
async function checkBack(run: TxRun, ask: AskCheckBack): Promise<LocalOutcome> {
  const outcome = await run.call(LOCAL, 'check-back', (ctx) => ask(ctx.gid, ctx.signal), false)
  return outcome.ok ? (outcome.result as LocalOutcome) : 'rolled-back'
}

async function settle(run: TxRun, outcome: LocalOutcome): Promise<void> {
  if (outcome === 'committed') {
    await run.transition('submitted', {}, 'check-back: the local transaction committed')
    return
  }
  const error = 'check-back: the local transaction rolled back'
  await run.transition('failed', { error }, error)
}
