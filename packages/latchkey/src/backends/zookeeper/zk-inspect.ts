import { readLong, ZK, type ZkStat, zkCode } from './zk-client.js'
import type { ZkConnection } from './zk-connection.js'
import { agreeingLine, type ChildParser, decodeLease, holdersOf, lineOf } from './zk-nodes.js'

/** A lock's children and how many of its holders still hold (lease unexpired by the server's clock, or starting). */
export interface LockState {
  readonly children: readonly string[]
  readonly live: number
}

/** Reads a lock node's state for `isLocked` / `forceRelease` (no watches, no writes). */
export async function lockState(
  conn: ZkConnection,
  parent: string,
  permits: number,
  parse?: ChildParser,
): Promise<LockState> {
  let children: string[]
  try {
    children = await conn.run<string[]>('getChildren', (cb) => conn.client.getChildren(parent, cb))
  } catch (error) {
    if (zkCode(error) === ZK.NO_NODE) return { children: [], live: 0 }
    throw error
  }
  // A semaphore node of another count than the one in force is withdrawing: it holds nothing.
  const holders = holdersOf(agreeingLine(lineOf(children, parse)).line, permits)
  const now = conn.serverNow()
  const alive = await Promise.all(
    holders.map(async (node) => {
      try {
        const [data, stat] = await conn.run<[Buffer, ZkStat]>('getData', (cb) =>
          conn.client.getData(`${parent}/${node.name}`, (e, d, s) => cb(e, [d, s])),
        )
        const lease = decodeLease(data)
        // A node without a lease is being granted right now: count it as held.
        return lease === undefined || Number(readLong(stat.mtime)) + lease.ttlMs > now
      } catch (error) {
        if (zkCode(error) === ZK.NO_NODE) return false
        throw error
      }
    }),
  )
  return { children, live: alive.filter(Boolean).length }
}
