import type { BranchChange, HistoryEvent, NewTx, TxChange, TxStore } from '../store/types.js'
import type { BranchOp, BranchRecord, TxEvent, TxRecord, TxStatus } from '../types.js'
import { StopDriving } from './drive-errors.js'
import type { RetryPolicy } from './options.js'
import type { TxLease } from './tx-lease.js'

/** What the run needs from the coordinator. */
export interface RunEnv {
  readonly store: TxStore
  readonly retry: RetryPolicy
  readonly timeoutMs: number
  /** Aborted when the coordinator closes. */
  readonly closing: AbortSignal
  readonly emit: (event: TxEvent) => void
}

type MutableBranch = { -readonly [K in keyof BranchRecord]: BranchRecord[K] }

/**
 * The in-memory copy of a transaction's record while this coordinator drives it under its lease, kept in step with
 * the log: every change is written (fenced by the lease's token) before it is applied here. Branch successes wait
 * for the transaction's next write, and a new transaction's create can ride with its first (one write each).
 */
export class RunRecord {
  readonly gid: string
  status: TxStatus
  private readonly branches = new Map<string, MutableBranch>()
  readonly signal: AbortSignal
  /** Branch successes applied here but not written yet: they ride with the transaction's next write. */
  private later: { branches: BranchChange[]; events: HistoryEvent[]; after: (() => void)[] } | undefined
  /** A new transaction not written yet: its create is the first write (see {@link RunRecord.createWithFirstWrite}). */
  private create: { tx: NewTx; after: () => void } | undefined

  constructor(
    readonly record: TxRecord,
    protected readonly lease: TxLease,
    protected readonly env: RunEnv,
  ) {
    this.gid = record.gid
    this.status = record.status
    for (const b of record.branches) this.branches.set(`${b.id}/${b.op}`, { ...b })
    this.signal = AbortSignal.any([lease.signal, env.closing])
  }

  branch(id: string, op: BranchOp): BranchRecord {
    const b = this.branches.get(`${id}/${op}`)
    if (b === undefined) throw new Error(`latchkey-tx: transaction ${this.gid} has no branch ${id}/${op}`)
    return b
  }

  /** Results of the forward operations that succeeded, by branch id. */
  results(): Record<string, unknown> {
    const out: Record<string, unknown> = {}
    for (const b of this.branches.values()) {
      if ((b.op === 'action' || b.op === 'try') && b.status === 'succeeded') out[b.id] = b.result
    }
    return out
  }

  /**
   * Writes a transition to the log, with the branch successes held back for it, then applies it here. Throws
   * StopDriving if the lease is gone.
   */
  async write(change: TxChange): Promise<void> {
    if (this.signal.aborted) throw new StopDriving('lease lost or coordinator closing')
    const later = this.later
    this.later = undefined
    const merged: TxChange =
      later === undefined
        ? change
        : {
            ...change,
            branches: mergeBranches([...later.branches, ...(change.branches ?? [])]),
            earlier: [...later.events, ...(change.earlier ?? [])],
          }
    // A final status ends the drive: its write releases a row lease too, so the release costs no statement.
    const final = change.status === 'succeeded' || change.status === 'failed'
    const leaseMs = this.lease.carry(final)
    const sentAt = Date.now()
    const carried = leaseMs === undefined ? merged : { ...merged, leaseMs }
    const create = this.create
    this.create = undefined
    if (create === undefined) await this.env.store.write(this.gid, this.lease.token, carried)
    else {
      await this.env.store.create(create.tx, this.lease.token, carried).catch((error: unknown) => {
        // Not created, or not knowably (the gid taken, the connection lost): a row lease is not ours to release.
        this.lease.carried(sentAt, true)
        throw error
      })
    }
    this.lease.carried(sentAt, final)
    this.apply(change)
    create?.after()
    for (const after of later?.after ?? []) after()
  }

  /**
   * A new transaction: its create is written together with its first transition (the first branch marked
   * running), one write instead of two; `after` runs once it is written. Nothing is done for the transaction
   * before that write, so the log holds it before anything is acted on, as if it had been created first.
   */
  createWithFirstWrite(tx: NewTx, after: () => void): void {
    this.create = { tx, after }
  }

  /**
   * A branch success: applied here at once, written with the transaction's next write. That write always comes
   * before anything else is done for the transaction (the next branch call, a compensation, the final status),
   * so the log holds every success before it is acted on; a crash in between loses only the record of a call
   * whose effect the participant keeps, and the call is made again, as after a crash just before any write.
   * `after` runs once it is written. Saves one log write per branch call.
   */
  protected writeLater(change: { branches: BranchChange[]; event: HistoryEvent }, after: () => void): void {
    this.apply({ ...change })
    this.later ??= { branches: [], events: [], after: [] }
    this.later.branches.push(...change.branches)
    this.later.events.push(change.event)
    this.later.after.push(after)
  }

  /** Writes the branch successes still held back, if any (a drive that ends without another write). */
  async flush(): Promise<void> {
    const later = this.later
    if (later === undefined) return
    const event = later.events.at(-1) as HistoryEvent
    this.later = { ...later, events: later.events.slice(0, -1) }
    await this.write({ branches: [], event })
  }

  private apply(change: Pick<TxChange, 'status' | 'branches'>): void {
    if (change.status !== undefined) this.status = change.status
    for (const c of change.branches ?? []) {
      const b = this.branches.get(`${c.id}/${c.op}`)
      if (b === undefined) continue
      if (c.status !== undefined) b.status = c.status
      if (c.attempts !== undefined) b.attempts = c.attempts
      if (c.result !== undefined) b.result = c.result
      if (c.lastError !== undefined) b.lastError = c.lastError
    }
  }
}

/** Changes of one branch operation folded into one (later fields win): a statement changes a row once. */
function mergeBranches(changes: readonly BranchChange[]): BranchChange[] {
  const byKey = new Map<string, BranchChange>()
  for (const c of changes) {
    const key = `${c.id}/${c.op}`
    byKey.set(key, { ...byKey.get(key), ...c })
  }
  return [...byKey.values()]
}
