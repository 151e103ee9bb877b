/**
 * Inspecting a session-scoped SQL lock (MySQL `GET_LOCK`, PostgreSQL advisory locks). The server knows only
 * which session holds the lock (MySQL's connection id, PostgreSQL's backend pid) and, for advisory locks, its
 * mode; it keeps no expiry, no fencing token and no owner id. A holder pinned by this process is reported with
 * its owner id and kind; a holder in another process as `session:<id>`.
 */
import { type HolderInfo, inspection, type LockInspection, type WaiterInfo } from '../../backend/inspection.js'
import type { LockKind } from '../../backend/types.js'

/** One session the server lists on a lock. */
export interface ServerSession {
  readonly session: number
  /** What the server tells of the mode: `read` for a shared lock, else `mutex` (exclusive, mutex or write). */
  readonly kind: LockKind
  /** The holder's fencing token, where the server records one (MySQL `for_update`). */
  readonly token?: bigint
}

/** What the server holds and queues on one lock key. */
export interface ServerLockState {
  readonly holders: readonly ServerSession[]
  /** Waiting writers' intents (advisory locks); none for GET_LOCK. */
  readonly waiters: readonly ServerSession[]
}

/** A lock this process pins: its session, owner and kind. */
export interface LocalSession {
  readonly session: number | undefined
  readonly owner: string
  readonly kind: LockKind
  readonly token?: bigint
}

/** The owner shown for a session of another process. */
export function sessionOwner(session: number): string {
  return `session:${session}`
}

/** Combines what the server lists with what this process knows of its own sessions. */
export function sessionInspection(
  key: string,
  state: ServerLockState,
  local: readonly LocalSession[],
  localWaiters: readonly LocalSession[] = [],
): LockInspection {
  const holders: HolderInfo[] = state.holders.map((s) => {
    const mine = local.find((l) => l.session === s.session)
    const token = mine?.token ?? s.token
    const holder =
      mine === undefined ? { owner: sessionOwner(s.session), kind: s.kind } : { owner: mine.owner, kind: mine.kind }
    return token === undefined ? holder : { ...holder, token }
  })
  const waiters: WaiterInfo[] = state.waiters.map((s) => {
    const mine = localWaiters.find((l) => l.session === s.session)
    return { owner: mine?.owner ?? sessionOwner(s.session), kind: s.kind }
  })
  return inspection(key, holders, waiters)
}
