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

/** Client -> runner: a history event for the runner to stamp on its own clock and append (see {@link HistoryWriter}). */
export interface RelayedEvent {
  kind: 'history'
  event: Omit<HistoryEvent, 't'>
}

/** Set in a client's environment when its own clocks cannot be trusted (T17b): its events are stamped by the runner. */
export const RELAY_ENV = 'LAB_HISTORY_RELAY'

/**
 * Appends events to a JSON-lines file synchronously: a process killed with SIGKILL keeps every line it wrote
 * before dying, which is what the checker needs to see the crash.
 *
 * A client whose monotonic clock is slowed (libfaketime, T17b) cannot stamp its events on the shared time axis: with
 * `LAB_HISTORY_RELAY=1` it sends each event over its IPC channel instead, and the runner stamps it with the real
 * monotonic clock on receipt and appends it to the client's file. The stamp is late by the channel's one-way delay,
 * which the runner measures (ping round trips, meta.json's `stampRttMs`).
 */
export class HistoryWriter {
  private readonly relay = process.env[RELAY_ENV] === '1' && process.send !== undefined

  constructor(
    private readonly path: string,
    private readonly proc: string,
  ) {}

  /** Records an event now and returns it (a relayed event's `t` here is this process's own, faked, clock). */
  log(type: EventType, f: string, extra: Omit<HistoryEvent, 't' | 'proc' | 'type' | 'f'> = {}): HistoryEvent {
    const event: HistoryEvent = { t: nowMs(), proc: this.proc, type, f, ...extra }
    if (this.relay) {
      const { t: _local, ...unstamped } = event
      process.send?.({ kind: 'history', event: unstamped } satisfies RelayedEvent)
    } else {
      appendFileSync(this.path, `${JSON.stringify(event)}\n`)
    }
    return event
  }
}

/** Appends a relayed event to `path`, stamped now on this (the runner's, real) monotonic clock. */
export function appendRelayed(path: string, relayed: RelayedEvent): void {
  appendFileSync(path, `${JSON.stringify({ t: nowMs(), ...relayed.event })}\n`)
}
