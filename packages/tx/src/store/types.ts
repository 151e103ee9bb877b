import type { Backend } from 'latchkey'
import type { BranchOp, BranchStatus, TxKind, TxRecord, TxStatus, TxSummary } from '../types.js'

/** A new global transaction, written by {@link TxStore.create}. */
export interface NewTx {
  readonly gid: string
  readonly kind: TxKind
  readonly name: string
  readonly status: TxStatus
  readonly input: unknown
  readonly deadlineAt: number | null
  readonly branches: readonly { readonly id: string; readonly op: BranchOp; readonly seq: number }[]
  /** When set, the writer takes the transaction's row lease: it expires `leaseMs` after the database's clock now. */
  readonly leaseMs?: number | undefined
}

/** A change to one branch operation. Unset fields keep their value. */
export interface BranchChange {
  readonly id: string
  readonly op: BranchOp
  readonly status?: BranchStatus
  readonly attempts?: number
  readonly result?: unknown
  readonly lastError?: string | null
}

/** One state transition: written atomically, and only while `token` is the highest that wrote the transaction. */
export interface TxChange {
  readonly status?: TxStatus
  readonly parkedFrom?: TxStatus | null
  readonly error?: string | null
  readonly branches?: readonly BranchChange[]
  /**
   * When set, the writer's row lease is extended to `leaseMs` after the database's clock now (`0` releases it):
   * a coordinator's every write renews its lease, so a short transaction never renews it separately.
   */
  readonly leaseMs?: number | undefined
  /**
   * History entries of earlier transitions merged into this write (written before `event`, in order): a
   * coordinator carries a branch's success in the transaction's next write instead of a write of its own.
   */
  readonly earlier?: readonly HistoryEvent[] | undefined
  /** The history entry describing the transition. */
  readonly event: HistoryEvent
}

/** A history entry as written: what happened, to which branch operation. */
export interface HistoryEvent {
  readonly type: string
  readonly branch?: string | undefined
  readonly op?: BranchOp | undefined
  readonly detail?: string | undefined
}

/** Filters of {@link TxStore.list}. */
export interface ListFilter {
  readonly status?: TxStatus | undefined
  readonly kind?: TxKind | undefined
  readonly limit?: number | undefined
}

/**
 * The coordinator's durable log. Every write carries the writer's fencing token (its recovery lease's
 * `lease.token`) and is refused with `StaleCoordinatorError` when a higher token has already written the same
 * transaction: a coordinator that was paused while another took over cannot write.
 */
export interface TxStore {
  /** `sqlite`, `postgres` or `mysql`. */
  readonly dialect: string
  /** Creates the tables when missing. Idempotent; safe to call from several processes at once. */
  init(): Promise<void>
  /**
   * Writes a new transaction with its branches (status `pending`); `TxError` `DUPLICATE_GID` if the gid exists.
   * With `first`, that first transition is applied in the same atomic write (its history entries after `created`).
   */
  create(tx: NewTx, token: bigint, first?: TxChange): Promise<void>
  /** Applies one transition (fenced, atomic); `StaleCoordinatorError` when overtaken, `TxError` `NOT_FOUND`. */
  write(gid: string, token: bigint, change: TxChange): Promise<void>
  /** The transaction with its branches and history, or undefined. */
  load(gid: string): Promise<TxRecord | undefined>
  /** Newest first. */
  list(filter?: ListFilter): Promise<TxSummary[]>
  /**
   * Gids of unfinished transactions (`prepared`, `submitted`, `aborting`), least recently written first; with
   * `claimable`, only those whose row lease has expired or was released (the ones {@link TxStore.claim} can take).
   */
  unfinished(limit: number, options?: { readonly claimable?: boolean }): Promise<string[]>
  /**
   * Row leases: takes over the transaction if its row lease has expired or was released, with one fenced write
   * that raises its token by one and sets the lease to `leaseMs` after the database's clock now. Resolves the new
   * token, or undefined when the lease is held (or the gid does not exist). The lease lives on the transaction's
   * own row, so taking, renewing and releasing it cost no lock round trips of their own.
   */
  claim?(gid: string, leaseMs: number): Promise<bigint | undefined>
  /** Row leases: extends the lease of `token`'s holder to `leaseMs` after now; false when `token` was overtaken. */
  renew?(gid: string, token: bigint, leaseMs: number): Promise<boolean>
  /** Row leases: releases the lease of `token`'s holder (a no-op when overtaken). */
  release?(gid: string, token: bigint): Promise<void>
  /** Deletes transactions (with branches and history): for tests and retention jobs. */
  remove(gids: readonly string[]): Promise<void>
  /** A latchkey backend on the same database, for the default recovery leases. The caller closes it. */
  lockBackend?(): Backend
  /** Closes what the store opened (never a pool or database handed in). */
  close(): Promise<void>
}
