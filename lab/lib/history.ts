import { appendFileSync } from 'node:fs'
import { nowMs } from './clock.js'

/** Jepsen's event types: an operation is invoked, then completes ok, fails (did not happen) or is info (unknown). */
export type EventType = 'invoke' | 'ok' | 'fail' | 'info'

/**
 * One line of a history. `t` is host-monotonic ms, `proc` the client (c1, c2, ... or `referee`/`nemesis`),
 * `f` the operation (acquire, read, write, release, lost, wake, pause, resume, kill, spawn, ...), `token` the
 * fencing token as a decimal string, `value` the register value read or written.
 */
export interface HistoryEvent {
  t: number
  proc: string
  type: EventType
  f: string
  token?: string
  value?: number
  accepted?: boolean
  error?: string
  /** In the referee's and the nemesis's histories: the client the event is about. */
  client?: string
}

/**
 * Appends events to a JSON-lines file synchronously: a process killed with SIGKILL keeps every line it wrote
 * before dying, which is what the checker needs to see the crash.
 */
export class HistoryWriter {
  constructor(
    private readonly path: string,
    private readonly proc: string,
  ) {}

  /** Records an event now and returns it. */
  log(type: EventType, f: string, extra: Omit<HistoryEvent, 't' | 'proc' | 'type' | 'f'> = {}): HistoryEvent {
    const event: HistoryEvent = { t: nowMs(), proc: this.proc, type, f, ...extra }
    appendFileSync(this.path, `${JSON.stringify(event)}\n`)
    return event
  }
}
