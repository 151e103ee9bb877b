import type { ChildProcess } from 'node:child_process'
import { nowMs, sleep } from '../lib/clock.js'
import { HistoryWriter } from '../lib/history.js'
import type { ProxyMode } from './fault-proxy.js'
import { type FaultSpec, type PlannedFault, slowedClient } from './fault-spec.js'
import type { CutWhich } from './netns-clusters.js'

/** What the nemesis can do to the world beyond the client processes (servers the lab owns, the proxies). */
export interface NemesisHooks {
  /** Kills the lock server and starts it again after `downMs`. */
  restartServer?: (downMs: number) => Promise<void>
  /** Freezes the lock server for `ms`. */
  pauseServer?: (ms: number) => Promise<void>
  /** Ends the lock session of client `proc` (process `pid`) on the server side; says what it did. */
  endSession?: (proc: string, pid: number) => Promise<string>
  /** Whether client process `pid` talks to a follower of the lock cluster (T9b strikes only such a holder). */
  onFollower?: (pid: number) => Promise<boolean>
  /** Cuts a member of the lock cluster off from the others for `ms` (`pid`: the holder); says what it cut. */
  partitionCluster?: (which: CutWhich, pid: number, ms: number) => Promise<string>
  /** Sets the mode of every proxy between `proc` and the lock service. */
  network?: (proc: string, mode: ProxyMode) => void
  /** Steps the lock server's wall clock by `ms`. */
  jumpServerClock?: (ms: number) => void
  /** Steps client `proc`'s wall clock by `ms`. */
  jumpClientClock?: (proc: string, ms: number) => void
  /** Kills the Redis primary and promotes its replica. */
  failover?: () => Promise<void>
  /** Cuts every client off from the nodes outside its side's majority (`split`, `moved`: sides swapped), or heals. */
  splitMajorities?: (phase: MajorityPhase) => void
}

/** The phases of a `majority-split`: odd clients on nodes 1-3 and even on 3-5, the sides swapped, healed. */
export type MajorityPhase = 'split' | 'moved' | 'heal'

/** The client a fault struck. */
interface Struck {
  proc: string
  child: ChildProcess
}

/** Carries out a plan against the client processes; strikes are logged to the nemesis history. */
export class Nemesis {
  private armed: ((proc: string, child: ChildProcess) => PlannedFault) | undefined
  private readonly log: HistoryWriter
  private stopped = false
  private cancel: () => void = () => {}

  constructor(
    private readonly spec: FaultSpec,
    historyPath: string,
    private readonly hooks: NemesisHooks = {},
  ) {
    this.log = new HistoryWriter(historyPath, 'nemesis')
  }

  /** The fault's kind. */
  get kind(): FaultSpec['kind'] {
    return this.spec.kind
  }

  /** Called by the runner when `proc` reaches `where` (`enter`, `write` or a pause point): the fault that struck. */
  strike(where: string, proc: string, child: ChildProcess): PlannedFault | undefined {
    if (this.armed === undefined || where !== this.spec.at) return undefined
    return this.armed(proc, child)
  }

  /**
   * `strike` for a fault that needs a particular victim: T9b cuts off a follower that serves the holder, so it
   * waits for a holder whose connection goes to a follower (a holder on the leader would make it T9a).
   */
  async strikeEligible(where: string, proc: string, child: ChildProcess): Promise<PlannedFault | undefined> {
    if (this.armed === undefined || where !== this.spec.at) return undefined
    if (this.spec.clientClockRate !== undefined && !slowedClient(this.spec, proc)) return undefined
    if (this.spec.member === 'holder-follower' && this.hooks.onFollower !== undefined) {
      if (!(await this.hooks.onFollower(child.pid ?? 0).catch(() => false))) return undefined
    }
    return this.strike(where, proc, child)
  }

  /** Runs the plan: waits, arms, lets the next matching client take the fault, repeats. */
  async run(plan: PlannedFault[]): Promise<void> {
    // A drifting clock is a condition of the whole run, in force from the server's start.
    if (this.spec.kind === 'server-drift') this.log.log('info', 'clock-drift', { value: this.spec.rate ?? 1 })
    for (const fault of plan) {
      await sleep(fault.afterMs)
      if (this.stopped) return
      const struck = await this.armFor(fault)
      if (struck === undefined) return
      await this.endFault(struck, fault)
    }
  }

  /** Arms `fault` for the next client that reaches its point: the client struck, or undefined once stopped. */
  private armFor(fault: PlannedFault): Promise<Struck | undefined> {
    return new Promise<Struck | undefined>((resolve) => {
      this.armed = (proc, child) => {
        this.armed = undefined
        this.apply(proc, child, fault)
        resolve({ proc, child })
        return fault
      }
      this.cancel = () => resolve(undefined)
    })
  }

  /** Waits out a fault that struck and undoes it (resumes, heals, restarts), so the next one can be armed. */
  private async endFault(struck: Struck, fault: PlannedFault): Promise<void> {
    const kind = this.spec.kind
    if (kind === 'session-kill') {
      await this.endSessionKill(struck, fault)
    } else if (kind === 'pause' || kind === 'starve') {
      await sleep(fault.durationMs)
      if (kind === 'pause') struck.child.kill('SIGCONT')
      this.log.log('info', 'resume', { client: struck.proc })
    } else if (kind === 'partition' || kind === 'stall-reply') {
      await sleep(fault.durationMs)
      this.hooks.network?.(struck.proc, 'pass')
      this.log.log('info', 'heal', { client: struck.proc })
    } else if (kind === 'delay-write') {
      // The runner delivers the held write itself; the next fault waits until it has landed.
      await sleep(fault.durationMs + 50)
    } else if (kind === 'server-clock-jump') {
      // The next fault is armed only after this one's step.
      await sleep((this.spec.delayMs ?? 0) + 50)
    } else if (kind === 'majority-split') {
      await this.endMajoritySplit(struck, fault)
    } else if (
      kind === 'server-kill' ||
      kind === 'server-pause' ||
      kind === 'cluster-partition' ||
      kind === 'failover'
    ) {
      await this.endServerFault(struck, fault)
    }
    // A killed client is replaced by the runner, and a client's clock jump is over once stepped: nothing to undo.
  }

  /** The faults of the lock service itself: a server killed or frozen, a cluster member cut off, a failover. */
  private async endServerFault(struck: Struck, fault: PlannedFault): Promise<void> {
    const kind = this.spec.kind
    if (kind === 'server-kill') {
      // Struck when a client had just entered: its lock dies with the server while it works.
      if (this.hooks.restartServer === undefined) throw new TypeError('lab: server-kill needs a server the lab owns')
      await this.hooks.restartServer(fault.durationMs)
      this.log.log('info', 'server-up')
    } else if (kind === 'server-pause') {
      if (this.hooks.pauseServer === undefined) throw new TypeError('lab: server-pause needs a server the lab owns')
      await this.hooks.pauseServer(fault.durationMs)
      this.log.log('info', 'server-resume')
    } else if (kind === 'cluster-partition') {
      if (this.hooks.partitionCluster === undefined) throw new TypeError('lab: cluster-partition needs a lab cluster')
      const what = await this.hooks
        .partitionCluster(this.spec.member ?? 'leader', struck.child.pid ?? 0, fault.durationMs)
        .catch((error: unknown) => `failed: ${String(error)}`)
      this.log.log('info', 'cluster-heal', { client: struck.proc, error: what })
    } else if (kind === 'failover') {
      if (this.hooks.failover === undefined) throw new TypeError('lab: failover needs a replicated Redis')
      await this.hooks.failover()
      this.log.log('info', 'failover-done')
    }
  }

  private async endSessionKill(struck: Struck, fault: PlannedFault): Promise<void> {
    // The client is stopped already; the server ends its session at once, and the client wakes up when the
    // drawn pause is over, to find its lock gone (or, on a lease backend, still there until its TTL).
    if (this.hooks.endSession === undefined) throw new TypeError('lab: session-kill needs a backend with sessions')
    const begun = nowMs()
    const pid = struck.child.pid ?? 0
    const what = await this.hooks.endSession(struck.proc, pid).catch((error: unknown) => `failed: ${String(error)}`)
    this.log.log('info', 'end-session', { client: struck.proc, error: what })
    await sleep(Math.max(0, fault.durationMs - (nowMs() - begun)))
    struck.child.kill('SIGCONT')
    this.log.log('info', 'resume', { client: struck.proc })
  }

  private async endMajoritySplit(struck: Struck, fault: PlannedFault): Promise<void> {
    const split = this.hooks.splitMajorities
    if (split === undefined) throw new TypeError('lab: majority-split needs per-client proxies')
    if (this.spec.moves === true) {
      await sleep(fault.durationMs / 2)
      split('moved')
      this.log.log('info', 'majority-moved', {
        client: struck.proc,
        error: 'odd clients on nodes 3-5, even on 1-3',
      })
      await sleep(fault.durationMs / 2)
    } else {
      await sleep(fault.durationMs)
    }
    split('heal')
    this.log.log('info', 'heal', { client: struck.proc })
  }

  /** Ends the plan early (the run is over). */
  stop(): void {
    this.stopped = true
    this.armed = undefined
    this.cancel()
  }

  private apply(proc: string, child: ChildProcess, fault: PlannedFault): void {
    const kind = this.spec.kind
    if (kind === 'server-kill' || kind === 'server-pause' || kind === 'cluster-partition') {
      this.log.log('info', kind, { client: proc, value: fault.durationMs })
    } else if (kind === 'pause' || kind === 'session-kill') {
      child.kill('SIGSTOP')
      this.log.log('info', 'pause', { client: proc, value: fault.durationMs })
    } else if (kind === 'starve') {
      // The client blocks itself (the runner's reply carries the duration); for the checker it is a pause.
      this.log.log('info', 'pause', { client: proc, value: fault.durationMs, error: 'event loop starved' })
    } else if (kind === 'partition' || kind === 'stall-reply') {
      this.hooks.network?.(proc, kind === 'partition' ? 'stall-both' : 'stall-down')
      this.log.log('info', kind, { client: proc, value: fault.durationMs })
    } else if (kind === 'delay-write') {
      this.log.log('info', 'delay-write', { client: proc, value: fault.durationMs })
    } else if (kind === 'server-clock-jump') {
      // Stepped at once, as the client enters: its lock's expiry moves closer by the whole jump.
      const jump = this.hooks.jumpServerClock
      if (jump === undefined) throw new TypeError('lab: a clock jump needs a fake server clock')
      setTimeout(() => {
        jump(fault.durationMs)
        this.log.log('info', 'clock-jump', { client: proc, value: fault.durationMs, error: 'server wall clock' })
      }, this.spec.delayMs ?? 0)
    } else if (kind === 'client-clock-jump') {
      if (this.hooks.jumpClientClock === undefined) throw new TypeError('lab: a clock jump needs fake client clocks')
      this.hooks.jumpClientClock(proc, fault.durationMs)
      this.log.log('info', 'clock-jump', { client: proc, value: fault.durationMs, error: 'client wall clock' })
    } else if (kind === 'failover') {
      this.log.log('info', 'failover', { client: proc })
    } else if (kind === 'majority-split') {
      this.hooks.splitMajorities?.('split')
      this.log.log('info', 'majority-split', {
        client: proc,
        value: fault.durationMs,
        error: 'odd clients on nodes 1-3, even on 3-5',
      })
    } else {
      child.kill('SIGKILL')
      this.log.log('info', 'kill', { client: proc })
    }
  }
}
