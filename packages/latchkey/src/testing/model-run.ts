import type { LockKind } from '../backend/types.js'
import type { Lease } from '../core/lease.js'
import { isLockError, PermitsMismatchError } from '../errors.js'
import { abortedWithin, delay, type SuiteEnv } from './env.js'
import * as model from './grant-model.js'
import {
  type Actor,
  createActor,
  describe,
  describeWait,
  handleOf,
  retireActor,
  startWait,
  until,
} from './model-actors.js'
import { ACTOR_IDS, draw, type ModelStep, mulberry32 } from './model-steps.js'

/** Long enough never to run out during a run; nothing renews it. */
const HELD_MS = 60_000
/** A short wait that runs out when blocked: longer than a slow server's answer (etcd's can take 50 ms). */
const BRIEF_WAIT_MS = 150
/** The lease of an `expire` step: long enough for a loaded machine to see it held, short enough to wait for. */
const EXPIRING_MS = 300
/** How long a waiter's first try may take to answer. */
const PATIENCE_MS = 5_000
/**
 * How long a due waiter may take to be granted, not scaled: under the 2 s the core sleeps between tries when the
 * backend pushes releases, so a release (or a waiter giving up) that tells no waiter is seen, not covered by a poll.
 */
const PROMPT_MS = 1_500

/** A disagreement between a backend and the model. */
class ModelDisagreement extends Error {
  override name = 'ModelDisagreement'
}

/**
 * The state of one model run: the model, the actors, and the steps made so far (for the failure message). Each
 * step is checked against the model as it is made; `step` throws, naming the seed and the steps, at the first
 * disagreement.
 */
export class ModelRun {
  private readonly random: () => number
  private readonly state: model.GrantModel
  private readonly name: string
  private readonly actors: Map<string, Actor>
  private readonly probe: Actor
  private readonly done: ModelStep[] = []
  private maxToken = -1n
  private expiries = 0

  constructor(
    private readonly env: SuiteEnv,
    private readonly group: model.KindGroup,
    private readonly seed: number,
  ) {
    this.random = mulberry32(seed)
    this.state = model.emptyModel(group, 1 + Math.floor(this.random() * 3))
    this.name = env.uniq(`model-${group}`)
    this.actors = new Map(ACTOR_IDS.map((id) => [id, createActor(id, env.backend(), env.namespace)]))
    this.probe = createActor('probe', env.backend(), env.namespace)
  }

  draw(): ModelStep {
    return draw(this.random, this.state, this.actors, this.expiries)
  }

  /** Makes one step and checks the backend's answers; any error names the seed and the steps. */
  async step(step: ModelStep): Promise<void> {
    this.done.push(step)
    if (step.op === 'expire') this.expiries++
    const actor = this.actors.get(step.actor) as Actor
    try {
      await this.make(step, actor)
      // An acquire that ran out with a try out gives back what that try got (a grant, a place in line) once it
      // answers, after the acquire rejected: the next step must not see it.
      if (actor.wait === undefined) await until(() => actor.calls === 0, this.env.ms(PATIENCE_MS), 'calls under way')
    } catch (error) {
      if (error instanceof ModelDisagreement) throw error
      this.fail(`${step.op}: ${error instanceof Error ? error.message : String(error)}`, error)
    }
  }

  /** Waiters the model does not expect to be granted must still wait: checked before every step. */
  checkWaiting(): void {
    for (const a of this.actors.values()) {
      if (a.wait !== undefined && a.wait.state !== 'pending') this.fail(`${describe(a)}, but the model has it wait`)
    }
  }

  async retire(): Promise<void> {
    await Promise.all([...this.actors.values(), this.probe].map(retireActor))
  }

  private async make(step: ModelStep, a: Actor): Promise<void> {
    const kind = step.kind ?? 'mutex'
    switch (step.op) {
      case 'try':
        return this.hold(a, kind, await this.lock(a, kind).tryAcquire(this.held), 'tryAcquire')
      case 'brief': {
        // A wait that must run out is short; one the rules grant at once may take a loaded server's time.
        const waitMs = this.env.ms(model.grantsNewcomer(this.state, kind) ? PATIENCE_MS : BRIEF_WAIT_MS)
        const wait = startWait(this.lock(a, kind), kind, { ...this.held, waitMs })
        await wait.done
        // Not granted: the wait ran out (LockTimeoutError), or ran out with a try still out, which the core
        // reports as the backend's silence (BackendUnavailableError); both are retryable, nothing else is.
        if (wait.state === 'failed' && !(isLockError(wait.error) && wait.error.retryable)) {
          this.fail(`acquire: ${describeWait(wait)}`, wait.error)
        }
        return this.hold(a, kind, wait.lease, `acquire({ waitMs: ${waitMs} })`)
      }
      case 'wait':
        return this.startWaiting(a, kind)
      case 'leave':
        return this.leave(a)
      case 'release':
        await a.lease?.release()
        a.lease = undefined
        this.state.holders.delete(a.id)
        return this.settle()
      case 'mismatch': {
        const other = this.lock(a, kind, this.state.permits + 1).tryAcquire(this.held)
        const error = await other.then(
          (lease) => lease,
          (e: unknown) => e,
        )
        if (!(error instanceof PermitsMismatchError)) this.fail(`other permits: not a PermitsMismatchError: ${error}`)
        return
      }
      case 'expire':
        return this.expire(a, kind)
    }
  }

  /** Checks a newcomer's answer against the model and records the lease. */
  private hold(a: Actor, kind: LockKind, lease: Lease | undefined, what: string): void {
    this.expectGrant(model.grantsNewcomer(this.state, kind), lease, what)
    a.lease = lease
    if (lease !== undefined) this.state.holders.set(a.id, kind)
  }

  private async startWaiting(a: Actor, kind: LockKind): Promise<void> {
    const refusals = a.refusals
    const wait = startWait(this.lock(a, kind), kind, { ...this.held, waitMs: this.env.ms(60_000) })
    a.wait = wait
    // In line once its first try answered: only then may the next step come (the order of waiters matters).
    await until(() => a.refusals > refusals || wait.state !== 'pending', this.env.ms(PATIENCE_MS), 'first try')
    if (wait.state !== 'pending') this.fail(`acquire: expected it to wait, got ${describe(a)}`)
    this.state.line.push({ actor: a.id, kind })
  }

  private async leave(a: Actor): Promise<void> {
    const wait = a.wait ?? this.fail(`model: ${a.id} does not wait`)
    const reason = new Error('grant model: leave')
    wait.abort.abort(reason)
    await wait.done
    if (wait.error !== reason) this.fail(`an aborted wait: expected the abort reason, got ${describe(a)}`)
    a.wait = undefined
    model.leaveLine(this.state, a.id)
    return this.settle()
  }

  /** After something left: the due waiters, and only they, are granted. */
  private async settle(): Promise<void> {
    const due = model.dueGrants(this.state)
    const ended = () => [...this.actors.values()].filter((a) => a.wait !== undefined && a.wait.state !== 'pending')
    const what = `granting ${due.count} of [${due.from}]`
    await until(() => ended().length >= due.count, PROMPT_MS, what).catch((error: Error) =>
      this.fail(`${error.message}; ended: [${ended().map(describe)}]`),
    )
    const got = ended()
    if (got.length !== due.count || got.some((a) => a.wait?.state !== 'granted' || !due.from.includes(a.id))) {
      this.fail(`expected ${due.count} of [${due.from}] granted, got [${got.map(describe)}]`)
    }
    this.checkTokens(got.map((a) => a.wait?.lease as Lease))
    model.grantWaiters(
      this.state,
      got.map((a) => a.id),
    )
    for (const a of got) {
      a.lease = a.wait?.lease
      a.wait = undefined
    }
  }

  /** A lease left to run out must free its slot: the probe, blocked while it is held, is granted after. */
  private async expire(a: Actor, kind: LockKind): Promise<void> {
    const probeKind = model.expiryProbe(this.state, kind) ?? this.fail('model: expiry not observable here')
    const probe = this.lock(this.probe, probeKind)
    const ttlMs = this.env.ms(EXPIRING_MS)
    const lease = await this.lock(a, kind).tryAcquire({ ttlMs, autoRenew: false })
    this.expectGrant(true, lease, 'tryAcquire (to expire)')
    this.expectGrant(false, await probe.tryAcquire(this.held), `${probeKind} beside the expiring ${kind}`)
    await abortedWithin(lease?.signal as AbortSignal, ttlMs + this.env.ms(1_000)).catch((e: Error) =>
      this.fail(`the expiring lease's signal: ${e.message}`),
    )
    // The local deadline comes first (the lease is timed from before the request); the server's follows, later by
    // its clock's granularity (etcd leases count whole seconds): a slot still taken long after is a lease too long.
    const patience = 2 * ttlMs + this.env.ms(1_000)
    const ends = performance.now() + patience
    for (;;) {
      const after = await probe.tryAcquire(this.held)
      if (after !== undefined) {
        this.checkTokens([after])
        return after.release()
      }
      if (performance.now() > ends) this.fail(`${probeKind} still refused ${patience} ms after the ${kind} expired`)
      await delay(this.env.ms(20))
    }
  }

  private get held() {
    return { ttlMs: this.env.ms(HELD_MS), autoRenew: false }
  }

  private lock(a: Actor, kind: LockKind, permits = this.state.permits) {
    return handleOf(a, this.group, kind, this.name, permits)
  }

  private expectGrant(expected: boolean, lease: Lease | undefined, what: string): void {
    if ((lease !== undefined) !== expected) {
      this.fail(`${what}: expected ${expected ? '' : 'not '}granted, got ${lease ? `token ${lease.token}` : 'refused'}`)
    }
    if (lease !== undefined) this.checkTokens([lease])
  }

  /** Fencing: new tokens exceed every earlier one of the name, and leases granted together differ. */
  private checkTokens(leases: readonly Lease[]): void {
    if (this.env.capabilities().fencing !== 'native') return
    const seen = new Set<bigint>()
    for (const { token } of leases) {
      if (token <= this.maxToken || seen.has(token)) this.fail(`token ${token} after ${this.maxToken} (or repeated)`)
      seen.add(token)
    }
    for (const token of seen) if (token > this.maxToken) this.maxToken = token
  }

  private fail(message: string, cause?: unknown): never {
    const { group, state, seed, done } = this
    const trail = done.map((s) => `${s.op} ${s.actor}${s.kind === undefined ? '' : ` ${s.kind}`}`).join(', ')
    const of = group === 'semaphore' ? ` of ${state.permits}` : ''
    throw new ModelDisagreement(
      `grant model (${this.env.backend().name}, ${group}${of}, seed ${seed}): ${message}\n` +
        `  steps: ${trail}\n  replay: LATCHKEY_MODEL_SEED=${seed}`,
      { cause },
    )
  }
}
