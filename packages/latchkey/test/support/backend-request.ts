/** What tests that drive a backend directly (without the core) send it, and read back. */
import { randomUUID } from 'node:crypto'
import type { AcquireRequest, AcquireResult, LockKind } from '../../src/backend/types.js'

/** A request as the core would send it for a fresh owner: a 10 s lease, no lock delay, no queue. */
export function backendRequest(key: string, kind: LockKind = 'mutex', permits = 1): AcquireRequest {
  return { key, kind, owner: randomUUID(), ttlMs: 10_000, permits, lockDelayMs: 0, queue: false, queueTtlMs: 5_000 }
}

/** The token of a granted try; throws when the try was refused. */
export function tokenOf(result: AcquireResult): bigint {
  if (!result.acquired) throw new Error('not acquired')
  return result.token
}
