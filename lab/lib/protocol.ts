/** Messages between the runner and a client process (Node's IPC channel of `fork`). */
import type { SessionInfo } from '../runner/end-session.js'

/** Client -> runner: an operation on the referee resource, or a pause point the nemesis may strike at. */
export type ClientRequest =
  | { id: number; kind: 'read'; token: string; session?: SessionInfo }
  | { id: number; kind: 'write'; token: string; value: number }
  | { id: number; kind: 'exit' }
  | { id: number; kind: 'point'; name: string }

/** Runner -> client: the answer to request `id`. */
export interface RunnerReply {
  id: number
  accepted: boolean
  value?: number
  /** The nemesis's `starve` fault: block the event loop this long before going on. */
  starveMs?: number
  /** A long job: stay in the critical section this long (the fault strikes while the holder works on). */
  workMs?: number
}

/** Runner -> client: finish the current critical section and exit. */
export interface StopMessage {
  kind: 'stop'
}

/** Runner -> client, answered at once with a {@link Pong}: measures the IPC channel's delay (T17b's stamps). */
export interface Ping {
  kind: 'ping'
  id: number
}

/** Client -> runner: the answer to a {@link Ping}. */
export interface Pong {
  kind: 'pong'
  id: number
}

/** What a client process is told to do (its argv[2], JSON). */
export interface ClientConfig {
  proc: string
  historyPath: string
  strategy: string
  /** A latchkey backend URL, or the server a naive strategy talks to. */
  url: string
  lockName: string
  namespace: string
  ttlMs: number
  csMs: [number, number]
  seed: number
}
