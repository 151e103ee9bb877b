import type { ChildProcess } from 'node:child_process'
import { sleep } from '../lib/clock.js'
import { HistoryWriter } from '../lib/history.js'
import { seededRng } from '../lib/rng.js'

/**
 * A fault: `pause` (SIGSTOP, then SIGCONT after the drawn duration) or `kill` (SIGKILL, the runner spawns a fresh
 * client), or `server-kill` (SIGKILL of the lock server as a client enters, restarted after the drawn duration). `at` is where a
 * client fault strikes: `enter` (a client that just entered the critical section: a holder paused at
 * an arbitrary point, scenario T2), or a named pause point of the client (`in-cs`: after the validity check,
 * before the write, scenario T3; `after-setnx`; `after-get`).
 */
export interface FaultSpec {
  kind: 'none' | 'pause' | 'kill' | 'server-kill'
  at: string
  /** Mean time between faults. */
  everyMs: number
  /** Pause length range (ms). */
  durationMs: [number, number]
}

/** One planned fault, drawn from the seed. */
export interface PlannedFault {
  afterMs: number
  durationMs: number
}

/** The seeded schedule: the same seed gives the same gaps and durations, so a failing run can be replayed. */
export function planFaults(spec: FaultSpec, seed: number, runMs: number): PlannedFault[] {
  if (spec.kind === 'none') return []
  const rng = seededRng(seed ^ 0x5eed)
  const plan: PlannedFault[] = []
  let clock = 1_000
  for (;;) {
    const afterMs = rng.int(Math.round(spec.everyMs / 2), Math.round((spec.everyMs * 3) / 2))
    const durationMs = rng.int(spec.durationMs[0], spec.durationMs[1])
    clock += afterMs + (spec.kind === 'kill' ? 0 : durationMs)
    if (clock > runMs - 1_000) return plan
    plan.push({ afterMs, durationMs })
  }
}

/** Carries out a plan against the client processes; strikes are logged to the nemesis history. */
export class Nemesis {
  private armed: ((proc: string, child: ChildProcess) => boolean) | undefined
  private readonly log: HistoryWriter
  private stopped = false

  constructor(
    private readonly spec: FaultSpec,
    historyPath: string,
    private readonly restartServer?: (downMs: number) => Promise<void>,
  ) {
    this.log = new HistoryWriter(historyPath, 'nemesis')
  }

  /** Called by the runner when `proc` reaches `where` (`enter` or a pause point); true when it struck. */
  strike(where: string, proc: string, child: ChildProcess): boolean {
    if (this.armed === undefined || where !== this.spec.at) return false
    return this.armed(proc, child)
  }

  /** Runs the plan: waits, arms, lets the next matching client take the fault, repeats. */
  async run(plan: PlannedFault[]): Promise<void> {
    for (const fault of plan) {
      await sleep(fault.afterMs)
      if (this.stopped) return
      const struck = await new Promise<{ proc: string; child: ChildProcess } | undefined>((resolve) => {
        this.armed = (proc, child) => {
          this.armed = undefined
          this.apply(proc, child, fault)
          resolve({ proc, child })
          return true
        }
        this.cancel = () => resolve(undefined)
      })
      if (struck === undefined) return
      if (this.spec.kind === 'server-kill') {
        // Struck when a client had just entered: its lock dies with the server while it works.
        if (this.restartServer === undefined) throw new TypeError('lab: server-kill needs a server the lab owns')
        await this.restartServer(fault.durationMs)
        this.log.log('info', 'server-up')
      }
      if (this.spec.kind === 'pause') {
        await sleep(fault.durationMs)
        struck.child.kill('SIGCONT')
        this.log.log('info', 'resume', { client: struck.proc })
      }
    }
  }

  private cancel: () => void = () => {}

  /** Ends the plan early (the run is over). */
  stop(): void {
    this.stopped = true
    this.armed = undefined
    this.cancel()
  }

  private apply(proc: string, child: ChildProcess, fault: PlannedFault): void {
    if (this.spec.kind === 'server-kill') {
      this.log.log('info', 'server-kill', { client: proc, value: fault.durationMs })
    } else if (this.spec.kind === 'pause') {
      child.kill('SIGSTOP')
      this.log.log('info', 'pause', { client: proc, value: fault.durationMs })
    } else {
      child.kill('SIGKILL')
      this.log.log('info', 'kill', { client: proc })
    }
  }
}
