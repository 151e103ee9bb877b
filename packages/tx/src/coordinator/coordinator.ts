import { randomUUID } from 'node:crypto'
import { type Backend, createLocks, type Locks } from 'latchkey'
import { checkId } from '../branch.js'
import { TxError } from '../errors.js'
import { createMsg, type Msg, type MsgOptions } from '../msg/msg.js'
import { NOTIFY_DEFINITION, type NotifyOptions, startNotify } from '../notify/notify.js'
import { createSaga, type Saga } from '../saga/saga.js'
import { storeFromUrl } from '../store/store-url.js'
import type { ListFilter, NewTx, TxChange, TxStore } from '../store/types.js'
import { createTcc, type Tcc, type TccParticipant } from '../tcc/tcc.js'
import { createThreePhase, type ThreePhase, type ThreePhaseParticipant } from '../three-phase/three-phase.js'
import type { TxEvent, TxKind, TxRecord, TxSummary } from '../types.js'
import { checkXaArgs, type XaBody, xaRecoveryDefinition, xaRunDefinition } from '../xa/xa.js'
import { sweepOrphans } from '../xa/xa-orphan-sweep.js'
import { checkXaResources, XaResources } from '../xa/xa-resources.js'
import type { XaDeps } from '../xa/xa-settle.js'
import { XaUnsupportedError } from '../xa/xa-unsupported-error.js'
import { checkFilter, checkRunOptions, checkStore, UNFINISHED } from './checks.js'
import { crashPoint } from './crash-point.js'
import { Registry, type TxDefinition } from './definition.js'
import { driveTransaction } from './drive.js'
import { KIND_TRAITS } from './kind-traits.js'
import { abortChange, retryChange } from './manual.js'
import { hasRowLeases, newRecord } from './new-record.js'
import { type CoordinatorOptions, type ResolvedOptions, resolveOptions } from './options.js'
import { RecoverySweep } from './recovery.js'
import { RowLease, type RowStore } from './row-lease.js'
import type { RunOptions, RunResult, Starter } from './run-result.js'
import { lockLease, type TxLease } from './tx-lease.js'

/** What `tc.xa` resolves to: the run's result and what the body returned. */
export type XaResult<R> = RunResult & { readonly value?: R | undefined }

/** The transaction coordinator (TC) returned by {@link createCoordinator}. */
export interface Coordinator {
  /** A saga named `name` (registered so that any coordinator with the same definition can resume it). */
  saga<I = unknown>(name: string): Saga<I>
  /** A TCC transaction over `participants` (registered like a saga). */
  tcc<I = unknown>(name: string, participants: Record<string, TccParticipant<I>>): Tcc<I>
  /**
   * A transactional message named `name` (registered like a saga): `.add(branch)` its branches, then
   * `.doAndSubmit(db, local)` per message. A lost submit is settled by the check-back (see {@link MsgOptions}).
   */
  msg<I = unknown>(name: string, options?: MsgOptions): Msg<I>
  /**
   * A best-effort notification: POSTs `body` to `url`, then retries on `schedule`, then parks it. Durable
   * before it resolves; any coordinator on the log resumes it. `tc.retry(gid)` replays a parked one.
   */
  notify(options: NotifyOptions): Promise<RunResult>
  /**
   * A three-phase commit (canCommit / preCommit / doCommit) over `participants` (opt-in; registered like a saga).
   * Unlike 2PC its participants do not block when the coordinator dies after preCommit: they commit on their own
   * timeout. A partition that splits them can leave a mixed outcome (`TxHeuristicError`): see the README.
   */
  threePhase<I = unknown>(name: string, participants: Record<string, ThreePhaseParticipant<I>>): ThreePhase<I>
  /**
   * Runs an XA two-phase commit: `body` opens branches with `x.branch(resource, fn)` (each prepared on its own
   * connection), then the commit decision is logged and every branch committed; if the body or a branch throws,
   * every branch is rolled back (status `failed`, `error` a `TxAbortedError`). Rejects with
   * `XaUnsupportedError` when a database cannot do XA. In-doubt branches of a crashed coordinator are finished
   * by recovery as the log says (register the databases in `resources`).
   */
  xa<R>(name: string, body: XaBody<R>, options?: RunOptions): Promise<XaResult<R>>
  /** The transaction with its branches and history, or undefined. */
  get(gid: string): Promise<TxRecord | undefined>
  /** Transactions, newest first (default limit 100). */
  list(filter?: ListFilter): Promise<TxSummary[]>
  /** Resumes a parked transaction where it stopped, with a fresh retry budget. */
  retry(gid: string): Promise<RunResult>
  /** Aborts a transaction whose forward phase is parked or stalled: compensates (cancels) what was done. */
  abort(gid: string): Promise<RunResult>
  /** Runs one recovery sweep now (the timer runs them every `recoverEveryMs` when `recover` is on). */
  recoverNow(): Promise<void>
  /** Stops sweeping and driving (unfinished transactions stay in the log for recovery), closes what it opened. */
  close(): Promise<void>
}

const lockName = (gid: string) => `tx:${gid}`

/**
 * What a service built into this package (the DTM-compatible server) needs beyond the public API: to register a
 * definition of its own and start transactions of it. Kept off the `Coordinator` interface, so that applications
 * define transactions only through the protocol builders.
 */
export interface CoordinatorInternals {
  readonly start: Starter
  register(def: TxDefinition): void
}

const INTERNALS = new WeakMap<Coordinator, CoordinatorInternals>()

/** The internals of a coordinator made by {@link createCoordinator}. */
export function internalsOf(tc: Coordinator): CoordinatorInternals {
  const internals = INTERNALS.get(tc)
  if (internals === undefined) throw new TypeError('latchkey-tx: not a coordinator made by createCoordinator()')
  return internals
}

class TxCoordinator implements Coordinator {
  private readonly o: ResolvedOptions
  private readonly store: TxStore
  private readonly ownsStore: boolean
  /** latchkey leases when `options.locks` was given or the store has no row leases; else undefined. */
  private readonly locks: Locks | undefined
  private readonly rows: RowStore | undefined
  private readonly ownedBackend: Backend | undefined
  private readonly registry = new Registry()
  private readonly driving = new Map<string, Promise<RunResult>>()
  private readonly closing = new AbortController()
  private readonly sweep: RecoverySweep | undefined
  private readonly xaDeps: XaDeps
  private initialized: Promise<void> | undefined
  private closed: Promise<void> | undefined

  constructor(options: CoordinatorOptions) {
    this.o = resolveOptions(options)
    this.ownsStore = typeof options.store === 'string'
    this.store = typeof options.store === 'string' ? storeFromUrl(options.store) : checkStore(options.store)
    if (options.locks !== undefined) this.locks = options.locks
    else if (hasRowLeases(this.store)) this.rows = this.store
    else {
      const backend = this.store.lockBackend?.()
      if (backend === undefined) throw new TypeError('latchkey-tx: this store has no lockBackend(); pass options.locks')
      this.ownedBackend = backend
      this.locks = createLocks({ backend, namespace: 'latchkey-tx', requireFencing: true })
    }
    // Notifications carry everything in their input: every coordinator can resume them.
    this.registry.add(NOTIFY_DEFINITION)
    INTERNALS.set(this, { start: this.start, register: (def) => this.registry.add(def) })
    this.xaDeps = { resources: new XaResources(checkXaResources(options.resources)), retry: this.o.retry }
    if (this.o.recover) {
      this.sweep = new RecoverySweep(
        this.o.recoverEveryMs,
        () => this.recoverNow(),
        (error) => this.emit({ type: 'recovery-error', gid: '', kind: 'saga', name: '', error }),
      )
      this.sweep.start()
    }
  }

  saga<I = unknown>(name: string): Saga<I> {
    return createSaga<I>(name, this.start, (def) => this.registry.add(def))
  }

  tcc<I = unknown>(name: string, participants: Record<string, TccParticipant<I>>): Tcc<I> {
    return createTcc<I>(name, participants, this.start, (def) => this.registry.add(def))
  }

  msg<I = unknown>(name: string, options: MsgOptions = {}): Msg<I> {
    return createMsg<I>(name, options, this.start, (def) => this.registry.add(def))
  }

  notify(options: NotifyOptions): Promise<RunResult> {
    return startNotify(options, this.start)
  }

  threePhase<I = unknown>(name: string, participants: Record<string, ThreePhaseParticipant<I>>): ThreePhase<I> {
    return createThreePhase<I>(name, participants, this.start, (def) => this.registry.add(def))
  }

  async xa<R>(name: string, body: XaBody<R>, options?: RunOptions): Promise<XaResult<R>> {
    checkXaArgs(name, body, options?.gid)
    const out: { value?: R } = {}
    const result = await this.start(xaRunDefinition(name, body, this.xaDeps, out), null, options, true)
    // A database that cannot do XA is a configuration error, not a business failure: thrown as itself.
    const cause = (result.error as { cause?: unknown } | undefined)?.cause
    if (cause instanceof XaUnsupportedError) throw cause
    return { ...result, value: out.value }
  }

  /** The definition that drives a stored transaction: registered by name, or any XA transaction. */
  private definition(kind: TxKind, name: string): TxDefinition | undefined {
    return kind === 'xa' ? xaRecoveryDefinition(name, this.xaDeps) : this.registry.get(kind, name)
  }

  async get(gid: string): Promise<TxRecord | undefined> {
    checkId('gid', gid)
    await this.ready()
    return this.store.load(gid)
  }

  async list(filter: ListFilter = {}): Promise<TxSummary[]> {
    checkFilter(filter)
    await this.ready()
    return this.store.list(filter)
  }

  private readonly start: Starter = async (def, input, options, timed) => {
    const { gid = randomUUID(), wait = true } = checkRunOptions(options, input)
    this.checkOpen()
    await this.ready()
    const { initial: status, createWithFirstWrite } = KIND_TRAITS[def.kind]
    const deadlineAt = timed ? Date.now() + this.o.timeoutMs : null
    const tx: NewTx = { gid, kind: def.kind, name: def.name, status, input, deadlineAt, branches: def.branches() }
    const created = () => {
      crashPoint('after-log:created')
      this.emit({ type: 'created', gid, kind: def.kind, name: def.name, status })
    }
    if (!wait || !createWithFirstWrite) {
      // Durably submitted before run() resolves: the create is written on its own.
      const lease = await this.created(tx, true)
      created()
      const done = this.drive(def, newRecord(tx, lease.token), lease)
      if (wait) return done
      void done
      return { gid, status, results: {} }
    }
    // This coordinator drives the gid already: a second create would find it taken.
    if (this.driving.has(gid)) throw duplicate(gid)
    const lease = await this.created(tx, false)
    if (this.driving.has(gid)) {
      lease.carried(Date.now(), true) // nothing was written under it: nothing to release
      throw duplicate(gid)
    }
    return this.drive(def, newRecord(tx, lease.token), lease, { tx, after: created })
  }

  /**
   * The lease of a new transaction, with its create written now (`write`) or left to the drive's first write. A
   * row lease is taken by the create itself (token 1); a latchkey lease is acquired first.
   */
  private async created(tx: NewTx, write: boolean): Promise<TxLease> {
    if (this.rows !== undefined) {
      const sentAt = Date.now()
      if (write) await this.store.create({ ...tx, leaseMs: this.o.leaseTtlMs }, 1n)
      return new RowLease(this.rows, tx.gid, 1n, this.o.leaseTtlMs, sentAt)
    }
    const lease = await this.takeLease(tx.gid)
    if (lease === undefined) {
      throw new TxError(`Transaction ${tx.gid} is being driven by another coordinator`, busy(tx.gid))
    }
    if (!write) return lease
    try {
      await this.store.create(tx, lease.token)
    } catch (error) {
      await lease.release()
      throw error
    }
    return lease
  }

  async retry(gid: string): Promise<RunResult> {
    return this.manual(gid, 'retry', retryChange)
  }

  async abort(gid: string): Promise<RunResult> {
    return this.manual(gid, 'abort', abortChange)
  }

  /** A manual action: under the transaction's lease, writes `change(record)` and drives it from there. */
  private async manual(gid: string, what: string, change: (record: TxRecord) => TxChange): Promise<RunResult> {
    const { def, record, lease } = await this.take(gid, what)
    try {
      const c = change(record)
      await this.store.write(record.gid, lease.token, c)
      this.emit({ type: c.event.type, gid: record.gid, kind: record.kind, name: record.name })
    } catch (error) {
      await lease.release()
      throw error
    }
    const updated = await this.store.load(record.gid)
    return this.drive(def, updated ?? record, lease)
  }

  /** Takes the lease of a stored transaction for a manual action. */
  private async take(gid: string, what: string): Promise<{ def: TxDefinition; record: TxRecord; lease: TxLease }> {
    checkId('gid', gid)
    this.checkOpen()
    await this.ready()
    const seen = await this.store.load(gid)
    if (seen === undefined) throw new TxError(`Transaction ${gid} does not exist`, { code: 'NOT_FOUND', gid })
    const def = this.definition(seen.kind, seen.name)
    if (def === undefined || !def.knows(seen.branches.map((b) => b.id))) {
      throw new TxError(
        `Cannot ${what} ${gid}: this coordinator has no ${seen.kind} "${seen.name}" with its branches`,
        {
          code: 'UNKNOWN_DEFINITION',
          gid,
        },
      )
    }
    const lease = this.driving.has(gid) ? undefined : await this.takeLease(gid)
    if (lease === undefined) throw new TxError(`Cannot ${what} ${gid}: a coordinator is driving it`, busy(gid))
    const record = await this.store.load(gid)
    return { def, record: record ?? seen, lease }
  }

  async recoverNow(): Promise<void> {
    if (this.closing.signal.aborted) return
    await this.ready()
    // With row leases only the transactions whose lease ran out are listed: no look at those being driven.
    const claimable = this.rows !== undefined ? { claimable: true } : {}
    for (const gid of await this.store.unfinished(100, claimable)) {
      if (this.closing.signal.aborted) return
      if (this.driving.has(gid)) continue
      const seen = await this.store.load(gid)
      const def = seen && this.definition(seen.kind, seen.name)
      if (seen === undefined || def === undefined || !def.knows(seen.branches.map((b) => b.id))) continue
      const lease = await this.takeLease(gid)
      if (lease === undefined) continue
      // Read again under the lease: the previous owner's last writes are all visible now.
      const record = await this.store.load(gid)
      if (record === undefined || !UNFINISHED.includes(record.status) || this.driving.has(gid)) {
        await lease.release()
        continue
      }
      try {
        await this.store.write(gid, lease.token, { event: { type: 'recovered', detail: `token ${lease.token}` } })
      } catch (error) {
        await lease.release()
        this.emit({ type: 'recovery-error', gid, kind: record.kind, name: record.name, error })
        continue
      }
      this.emit({ type: 'recovered', gid, kind: record.kind, name: record.name, status: record.status })
      void this.drive(def, record, lease)
    }
    await sweepOrphans(this.xaDeps.resources, this.store, (error) =>
      this.emit({ type: 'recovery-error', gid: '', kind: 'xa', name: '', error }),
    )
  }

  private drive(
    def: TxDefinition,
    record: TxRecord,
    lease: TxLease,
    create?: { tx: NewTx; after: () => void },
  ): Promise<RunResult> {
    const env = {
      store: this.store,
      retry: this.o.retry,
      timeoutMs: this.o.timeoutMs,
      closing: this.closing.signal,
      emit: (e: TxEvent) => this.emit(e),
    }
    const statusOf = async (gid: string) => (await this.store.load(gid))?.status
    const done = driveTransaction(def, record, lease, env, statusOf, create).finally(() =>
      this.driving.delete(record.gid),
    )
    this.driving.set(record.gid, done)
    return done
  }

  /** The lease of a stored transaction, if nobody holds it: a claim of its row lease, or a latchkey lease. */
  private async takeLease(gid: string): Promise<TxLease | undefined> {
    if (this.rows !== undefined) {
      const sentAt = Date.now()
      const token = await this.rows.claim(gid, this.o.leaseTtlMs)
      return token === undefined ? undefined : new RowLease(this.rows, gid, token, this.o.leaseTtlMs, sentAt)
    }
    const lease = await this.locks?.mutex(lockName(gid)).tryAcquire({ ttlMs: this.o.leaseTtlMs })
    return lease === undefined ? undefined : lockLease(lease)
  }

  private ready(): Promise<void> {
    this.initialized ??= this.store.init().catch((error: unknown) => {
      this.initialized = undefined
      throw error
    })
    return this.initialized
  }

  private emit(event: TxEvent): void {
    try {
      this.o.onEvent?.(event)
    } catch {
      // A listener's failure must not change the outcome of a transaction.
    }
  }

  private checkOpen(): void {
    if (this.closing.signal.aborted) throw new TxError('This coordinator is closed', { code: 'CLOSED' })
  }

  close(): Promise<void> {
    this.closed ??= (async () => {
      this.closing.abort(new TxError('coordinator closing', { code: 'CLOSED' }))
      await this.sweep?.stop()
      await Promise.allSettled([...this.driving.values()])
      if (this.ownedBackend !== undefined) {
        await this.locks?.close()
        await this.ownedBackend.close()
      }
      if (this.ownsStore) await this.store.close()
    })()
    return this.closed
  }
}

const busy = (gid: string) => ({ code: 'TX_BUSY', gid, retryable: true })

const duplicate = (gid: string) =>
  new TxError(`Transaction ${gid} already exists; use another gid`, { code: 'DUPLICATE_GID', gid })

/**
 * Creates a transaction coordinator over a durable log. Validates every option before any I/O.
 *
 * @example
 * const tc = createCoordinator({ store: 'sqlite:./tx.db' })
 * const order = tc.saga('order').step('reserve', { action: reserve, compensate: release })
 * const r = await order.run({ sku: 'A', qty: 1 })   // r.status: 'succeeded' | 'failed' | 'parked'
 * await tc.close()
 */
export function createCoordinator(options: CoordinatorOptions): Coordinator {
  return new TxCoordinator(options)
}
