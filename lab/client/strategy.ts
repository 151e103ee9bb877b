import type { HistoryWriter } from '../lib/history.js'
import type { ClientConfig } from '../lib/protocol.js'
import type { SessionInfo } from '../runner/end-session.js'

/** A lock as a lab client holds it. */
export interface Held {
  /** The fencing token (`0n` for strategies that have none). */
  token: bigint
  /** Aborts when the lock library notices the lock is lost (latchkey's `lease.signal`). */
  signal?: AbortSignal
  /** What the nemesis needs to end this lock's session on the server and cannot see there (T8). */
  session?: SessionInfo
  /** The last check before writing: does this client still believe it holds the lock? */
  stillValid(): Promise<boolean>
  release(): Promise<void>
}

/** How a client takes a lock: latchkey on some backend, or one of the naive algorithms. */
export interface Strategy {
  /** Waits for the lock; throws when it could not be had within the strategy's wait. */
  acquire(): Promise<Held>
  close(): Promise<void>
}

/** What a strategy gets from the client process. */
export interface StrategyContext {
  config: ClientConfig
  history: HistoryWriter
  /** A named point where the nemesis may pause or kill this process (the runner answers when it lets go). */
  point(name: string): Promise<void>
}

/** Waits used by the polling naive strategies. */
export const NAIVE_WAIT_MS = 5_000
export const NAIVE_POLL_MS = 25
