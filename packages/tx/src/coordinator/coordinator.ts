import { randomUUID } from 'node:crypto'
import { type Backend, createLocks, type Lease, type Locks } from 'latchkey'
import { checkId } from '../branch.js'
import { describe, StaleCoordinatorError, TxAbortedError, TxError, TxTimeoutError } from '../errors.js'
import { createSaga, type Saga } from '../saga/saga.js'
import { storeFromUrl } from '../store/store-url.js'
import type { ListFilter, TxStore } from '../store/types.js'
import { createTcc, type Tcc, type TccParticipant } from '../tcc/tcc.js'
import type { TxEvent, TxRecord, TxStatus, TxSummary } from '../types.js'
import { checkFilter, checkRunOptions, checkStore, UNFINISHED } from './checks.js'
import { Registry, type TxDefinition } from './definition.js'
import { type CoordinatorOptions, type ResolvedOptions, resolveOptions } from './options.js'
import { RecoverySweep } from './recovery.js'
import type { RunResult, Starter } from './run-result.js'
import { Parked, StopDriving, TxRun } from './tx-run.js'

/** The transaction coordinator (TC) returned by {@link createCoordinator}. */
export interface Coordinator {
  /** A saga named `name` (registered so that any coordinator with the same definition can resume it). */
  saga<I = unknown>(name: string): Saga<I>
  /** A TCC transaction over `participants` (registered like a saga). */
  tcc<I = unknown>(name: string, participants: Record<string, TccParticipant<I>>): Tcc<I>
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

class TxCoordinator implements Coordinator {
  private readonly o: ResolvedOptions
  private readonly store: TxStore
  private readonly ownsStore: boolean
  private readonly locks: Locks
  private readonly ownedBackend: Backend | undefined
  private readonly registry = new Registry()
  private readonly driving = new Map<string, Promise<RunResult>>()
  private readonly closing = new AbortController()
  private readonly sweep: RecoverySweep | undefined
  private initialized: Promise<void> | undefined
  private closed: Promise<void> | undefined

  constructor(options: CoordinatorOptions) {
    this.o = resolveOptions(options)
    this.ownsStore = typeof options.store === 'string'
    this.store = typeof options.store === 'string' ? storeFromUrl(options.store) : checkStore(options.store)
    if (options.locks !== undefined) this.locks = options.locks
    else {
      const backend = this.store.lockBackend?.()
      if (backend === undefined) throw new TypeError('latchkey-tx: this store has no lockBackend(); pass options.locks')
      this.ownedBackend = backend
      this.locks = createLocks({ backend, namespace: 'latchkey-tx', requireFencing: true })
    }
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
    const lease = await this.lease(gid)
    if (lease === undefined) throw new TxError(`Transaction ${gid} is being driven by another coordinator`, busy(gid))
    const status = def.kind === 'tcc' ? 'prepared' : 'submitted'
    const deadlineAt = timed ? Date.now() + this.o.timeoutMs : null
    try {
      await this.store.create(
        { gid, kind: def.kind, name: def.name, status, input, deadlineAt, branches: def.branches() },
        lease.token,
      )
    } catch (error) {
      await lease.release().catch(() => undefined)
      throw error
    }
    this.emit({ type: 'created', gid, kind: def.kind, name: def.name, status })
    const record = await this.store.load(gid)
    if (record === undefined) throw new TxError(`Transaction ${gid} vanished from the log`, { code: 'NOT_FOUND', gid })
    const done = this.drive(def, record, lease)
    return wait ? done : { gid, status, results: {} }
  }

  async retry(gid: string): Promise<RunResult> {
    const { def, record, lease } = await this.take(gid, 'retry')
    if (record.status !== 'parked' || record.parkedFrom === null) {
      await lease.release().catch(() => undefined)
      throw new TxError(`Transaction ${gid} is ${record.status}, not parked; only a parked one can be retried`, {
        code: 'NOT_PARKED',
        gid,
      })
    }
    const resets = record.branches
      .filter((b) => b.status !== 'succeeded' && b.attempts > 0)
      .map((b) => ({ id: b.id, op: b.op, attempts: 0 }))
    return this.resume(def, record, lease, {
      status: record.parkedFrom,
      parkedFrom: null,
      branches: resets,
      event: { type: 'retried', detail: `back to ${record.parkedFrom}` },
    })
  }

  async abort(gid: string): Promise<RunResult> {
    const { def, record, lease } = await this.take(gid, 'abort')
    const phase = record.status === 'parked' ? record.parkedFrom : record.status
    // A TCC transaction that reached `submitted` has decided to confirm: only its try phase can be aborted.
    if (phase !== (record.kind === 'tcc' ? 'prepared' : 'submitted')) {
      await lease.release().catch(() => undefined)
      const hint = record.status === 'parked' ? '; its compensation is parked: fix the cause and tc.retry(gid)' : ''
      throw new TxError(`Transaction ${gid} is ${record.status}; only a forward phase can be aborted${hint}`, {
        code: 'NOT_ABORTABLE',
        gid,
      })
    }
    const resets = record.branches
      .filter((b) => b.status !== 'succeeded')
      .map((b) => ({ id: b.id, op: b.op, attempts: 0 }))
    return this.resume(def, record, lease, {
      status: 'aborting',
      parkedFrom: null,
      error: 'aborted by tc.abort()',
      branches: resets,
      event: { type: 'aborting', detail: 'aborted by tc.abort()' },
    })
  }

  /** Takes the lease of a stored transaction for a manual action. */
  private async take(gid: string, what: string): Promise<{ def: TxDefinition; record: TxRecord; lease: Lease }> {
    checkId('gid', gid)
    this.checkOpen()
    await this.ready()
    const seen = await this.store.load(gid)
    if (seen === undefined) throw new TxError(`Transaction ${gid} does not exist`, { code: 'NOT_FOUND', gid })
    const def = this.registry.get(seen.kind, seen.name)
    if (def === undefined || !def.knows(seen.branches.map((b) => b.id))) {
      throw new TxError(
        `Cannot ${what} ${gid}: this coordinator has no ${seen.kind} "${seen.name}" with its branches`,
        {
          code: 'UNKNOWN_DEFINITION',
          gid,
        },
      )
    }
    const lease = this.driving.has(gid) ? undefined : await this.lease(gid)
    if (lease === undefined) throw new TxError(`Cannot ${what} ${gid}: a coordinator is driving it`, busy(gid))
    const record = await this.store.load(gid)
    return { def, record: record ?? seen, lease }
  }

  private async resume(def: TxDefinition, record: TxRecord, lease: Lease, change: Parameters<TxStore['write']>[2]) {
    try {
      await this.store.write(record.gid, lease.token, change)
    } catch (error) {
      await lease.release().catch(() => undefined)
      throw error
    }
    this.emit({ type: change.event.type, gid: record.gid, kind: record.kind, name: record.name })
    const updated = await this.store.load(record.gid)
    return this.drive(def, updated ?? record, lease)
  }

  async recoverNow(): Promise<void> {
    await this.ready()
    for (const gid of await this.store.unfinished(100)) {
      if (this.closing.signal.aborted) return
      if (this.driving.has(gid)) continue
      const seen = await this.store.load(gid)
      const def = seen && this.registry.get(seen.kind, seen.name)
      if (seen === undefined || def === undefined || !def.knows(seen.branches.map((b) => b.id))) continue
      const lease = await this.lease(gid)
      if (lease === undefined) continue
      // Read again under the lease: the previous owner's last writes are all visible now.
      const record = await this.store.load(gid)
      if (record === undefined || !UNFINISHED.includes(record.status) || this.driving.has(gid)) {
        await lease.release().catch(() => undefined)
        continue
      }
      try {
        await this.store.write(gid, lease.token, { event: { type: 'recovered', detail: `token ${lease.token}` } })
      } catch (error) {
        await lease.release().catch(() => undefined)
        this.emit({ type: 'recovery-error', gid, kind: record.kind, name: record.name, error })
        continue
      }
      this.emit({ type: 'recovered', gid, kind: record.kind, name: record.name, status: record.status })
      void this.drive(def, record, lease)
    }
  }

  private drive(def: TxDefinition, record: TxRecord, lease: Lease): Promise<RunResult> {
    const env = { store: this.store, retry: this.o.retry, timeoutMs: this.o.timeoutMs, closing: this.closing.signal }
    const run = new TxRun(record, lease, { ...env, emit: (e) => this.emit(e) })
    const done = (async (): Promise<RunResult> => {
      let error: TxError | undefined
      try {
        await def.drive(run)
      } catch (e) {
        if (e instanceof Parked) error = e.error
        else if (e instanceof StaleCoordinatorError) {
          error = e
          run.emit({ type: 'stale', error: e })
        } else if (!(e instanceof StopDriving)) {
          error = new TxError(`Driving ${record.gid} failed: ${describe(e)}`, {
            code: 'DRIVE_FAILED',
            gid: record.gid,
            cause: e,
            retryable: true,
          })
          run.emit({ type: 'drive-error', error: e })
        }
      } finally {
        this.driving.delete(record.gid)
        await lease.release().catch(() => undefined)
      }
      if (error === undefined && run.status === 'failed') error = abortError(run, record)
      // Overtaken: what this coordinator remembers is stale; report the log's status.
      const status = error instanceof StaleCoordinatorError ? await this.statusOf(record.gid, run.status) : run.status
      return { gid: record.gid, status, results: run.results(), ...(error === undefined ? {} : { error }) }
    })()
    this.driving.set(record.gid, done)
    return done
  }

  private async statusOf(gid: string, fallback: TxStatus): Promise<TxStatus> {
    return (await this.store.load(gid).catch(() => undefined))?.status ?? fallback
  }

  /** The transaction's lease, if nobody holds it. */
  private async lease(gid: string): Promise<Lease | undefined> {
    return this.locks.mutex(lockName(gid)).tryAcquire({ ttlMs: this.o.leaseTtlMs })
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
        await this.locks.close()
        await this.ownedBackend.close()
      }
      if (this.ownsStore) await this.store.close()
    })()
    return this.closed
  }
}

const busy = (gid: string) => ({ code: 'TX_BUSY', gid, retryable: true })

function abortError(run: TxRun, record: TxRecord): TxError {
  const cause = run.failure?.cause ?? record.error ?? 'aborted'
  if (cause instanceof TxTimeoutError) return cause
  return new TxAbortedError(record.gid, run.failure?.branch, cause)
}

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
