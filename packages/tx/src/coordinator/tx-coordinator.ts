import { randomUUID } from 'node:crypto'
import { checkId } from '../branch.js'
import { TxError } from '../errors.js'
import { createMsg, type Msg, type MsgOptions } from '../msg/msg.js'
import { NOTIFY_DEFINITION, type NotifyOptions, startNotify } from '../notify/notify.js'
import { createSaga, type Saga } from '../saga/saga.js'
import { storeFromUrl } from '../store/store-url.js'
import type { ListFilter, NewTx, TxChange, TxStore } from '../store/types.js'
import { createTcc, type Tcc, type TccParticipant } from '../tcc/tcc.js'
import { createThreePhase, type ThreePhase, type ThreePhaseParticipant } from '../three-phase/three-phase.js'
import type { TxEvent, TxRecord, TxSummary } from '../types.js'
import { checkXaArgs, type XaBody, xaRecoveryDefinition, xaRunDefinition } from '../xa/xa.js'
import { sweepOrphans } from '../xa/xa-orphan-sweep.js'
import { checkXaResources, XaResources } from '../xa/xa-resources.js'
import type { XaDeps } from '../xa/xa-settle.js'
import { XaUnsupportedError } from '../xa/xa-unsupported-error.js'
import { checkFilter, checkRunOptions, checkStore, UNFINISHED } from './checks.js'
import type { Coordinator, XaResult } from './coordinator.js'
import { setInternals } from './coordinator-internals.js'
import { crashPoint } from './crash-point.js'
import { Registry, type TxDefinition } from './definition.js'
import { driveTransaction } from './drive.js'
import { KIND_TRAITS } from './kind-traits.js'
import { abortChange, retryChange } from './manual.js'
import { newRecord } from './new-record.js'
import { type CoordinatorOptions, type ResolvedOptions, resolveOptions } from './options.js'
import { RecoverySweep } from './recovery.js'
import type { RunOptions, RunResult, Starter } from './run-result.js'
import type { TxLease } from './tx-lease.js'
import { busy, TxLeases } from './tx-leases.js'

/**
 * The coordinator behind {@link Coordinator}: starts transactions under a lease (see TxLeases), drives them, and
 * resumes those of other coordinators whose lease ran out (recovery sweep).
 */
export class TxCoordinator implements Coordinator {
  private readonly o: ResolvedOptions
  private readonly store: TxStore
  private readonly ownsStore: boolean
  private readonly leases: TxLeases
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
    this.leases = new TxLeases(this.store, options.locks, this.o.leaseTtlMs)
    // Notifications carry everything in their input: every coordinator can resume them.
    this.registry.add(NOTIFY_DEFINITION)
    setInternals(this, { start: this.start, register: (def) => this.registry.add(def) })
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

  /**
   * The definition that drives a stored transaction: registered by name, or any XA transaction; undefined when
   * this coordinator has none that knows every branch of the record.
   */
  private definitionOf(record: TxRecord): TxDefinition | undefined {
    const def =
      record.kind === 'xa'
        ? xaRecoveryDefinition(record.name, this.xaDeps)
        : this.registry.get(record.kind, record.name)
    return def?.knows(record.branches.map((b) => b.id)) === true ? def : undefined
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
      const lease = await this.leases.forNew(tx, true)
      created()
      const done = this.drive(def, newRecord(tx, lease.token), lease)
      if (wait) return done
      void done
      return { gid, status, results: {} }
    }
    // This coordinator drives the gid already: a second create would find it taken.
    if (this.driving.has(gid)) throw duplicate(gid)
    const lease = await this.leases.forNew(tx, false)
    if (this.driving.has(gid)) {
      lease.carried(Date.now(), true) // nothing was written under it: nothing to release
      throw duplicate(gid)
    }
    return this.drive(def, newRecord(tx, lease.token), lease, { tx, after: created })
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
    const def = this.definitionOf(seen)
    if (def === undefined) {
      const unknown = `Cannot ${what} ${gid}: this coordinator has no ${seen.kind} "${seen.name}" with its branches`
      throw new TxError(unknown, { code: 'UNKNOWN_DEFINITION', gid })
    }
    const lease = this.driving.has(gid) ? undefined : await this.leases.take(gid)
    if (lease === undefined) throw new TxError(`Cannot ${what} ${gid}: a coordinator is driving it`, busy(gid))
    const record = await this.store.load(gid)
    return { def, record: record ?? seen, lease }
  }

  async recoverNow(): Promise<void> {
    if (this.closing.signal.aborted) return
    await this.ready()
    // With row leases only the transactions whose lease ran out are listed: no look at those being driven.
    const claimable = this.leases.rows !== undefined ? { claimable: true } : {}
    for (const gid of await this.store.unfinished(100, claimable)) {
      if (this.closing.signal.aborted) return
      if (!this.driving.has(gid)) await this.recover(gid)
    }
    await sweepOrphans(this.xaDeps.resources, this.store, (error) =>
      this.emit({ type: 'recovery-error', gid: '', kind: 'xa', name: '', error }),
    )
  }

  /** Takes over one unfinished transaction if this coordinator knows it and nobody holds its lease, and drives it. */
  private async recover(gid: string): Promise<void> {
    const seen = await this.store.load(gid)
    const def = seen && this.definitionOf(seen)
    if (def === undefined) return
    const lease = await this.leases.take(gid)
    if (lease === undefined) return
    // Read again under the lease: the previous owner's last writes are all visible now.
    const record = await this.store.load(gid)
    if (record === undefined || !UNFINISHED.includes(record.status) || this.driving.has(gid)) {
      await lease.release()
      return
    }
    try {
      await this.store.write(gid, lease.token, { event: { type: 'recovered', detail: `token ${lease.token}` } })
    } catch (error) {
      await lease.release()
      this.emit({ type: 'recovery-error', gid, kind: record.kind, name: record.name, error })
      return
    }
    this.emit({ type: 'recovered', gid, kind: record.kind, name: record.name, status: record.status })
    void this.drive(def, record, lease)
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
      await this.leases.close()
      if (this.ownsStore) await this.store.close()
    })()
    return this.closed
  }
}

const duplicate = (gid: string) =>
  new TxError(`Transaction ${gid} already exists; use another gid`, { code: 'DUPLICATE_GID', gid })
