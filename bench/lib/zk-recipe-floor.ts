/**
 * The floor of a ZooKeeper lock in Node: Curator's InterProcessMutex recipe, request for request, on the bare wire
 * protocol (zk-wire-session.ts) with no library at all. Acquire creates an EPHEMERAL_SEQUENTIAL node under the lock's
 * node and lists the children; the lowest holds; any other node sets a data watch on the node just before it and
 * waits for that watch, then lists again. Release deletes the node. Per acquisition that is what Curator sends: an
 * uncontended pair create, getChildren, delete; a waiter also getData (watch) and a second getChildren.
 *
 * What it leaves out, and latchkey cannot: leases (TTL, renewal, expiry judged by contenders), fencing tokens, the
 * protected-node recovery of a lost create reply, reconnects, and a lock core. So latchkey (or any Node client)
 * can at best approach it; where Curator is ahead of this floor too, no Node lock can match Curator in that cell.
 */
import type { Contender, Held } from './contender.js'
import { ZkWireError, ZkWireSession } from './zk-wire-session.js'

const NO_NODE = -101
const NODE_EXISTS = -110
const EPHEMERAL_SEQUENTIAL = 3

/**
 * Opens the floor on one server of `connectString`, its nodes under `/<ns>-floor` (shared by the processes of
 * a cell; the last to close removes it).
 */
export async function zkRecipeFloor(connectString: string, ns: string, ttlMs: number): Promise<Contender> {
  // A member at random, as the clients do (on an ensemble the member decides much of a pair's time).
  const members = connectString.split(',')
  const [host = '127.0.0.1', port = '2181'] = (members[Math.floor(Math.random() * members.length)] ?? '').split(':')
  const session = await ZkWireSession.open(host, Number(port), Math.max(ttlMs, 4_000))
  const base = `/${ns}-floor`
  const made = new Set<string>()
  const ensure = async (path: string): Promise<void> => {
    if (made.has(path)) return
    await session.create(path, Buffer.alloc(0), 0).catch((error: unknown) => {
      if (!(error instanceof ZkWireError && error.code === NODE_EXISTS)) throw error
    })
    made.add(path)
  }
  await ensure(base)
  return {
    async acquire(key, waitMs): Promise<Held | undefined> {
      const parent = `${base}/${encodeURIComponent(key).replaceAll('.', '%2E')}`
      await ensure(parent)
      const path = await session.create(`${parent}/lock-`, Buffer.alloc(0), EPHEMERAL_SEQUENTIAL)
      const name = path.slice(parent.length + 1)
      const deadline = performance.now() + waitMs
      const held: Held = { release: () => session.delete(path) }
      for (;;) {
        // Sequential names sort by their 10-digit counter (one prefix for all).
        const line = (await session.getChildren(parent)).sort()
        const index = line.indexOf(name)
        if (index === 0) return held
        if (index < 0) throw new Error(`the floor's node ${path} is gone`)
        const left = deadline - performance.now()
        if (left <= 0) break
        let wake: () => void = () => undefined
        const woken = new Promise<boolean>((resolve) => {
          const timer = setTimeout(() => resolve(false), left)
          wake = () => {
            clearTimeout(timer)
            resolve(true)
          }
        })
        try {
          await session.watch(`${parent}/${line[index - 1]}`, wake)
        } catch (error) {
          if (error instanceof ZkWireError && error.code === NO_NODE) {
            wake()
            continue
          }
          throw error
        }
        if (!(await woken)) break
      }
      await session.delete(path)
      return undefined
    },
    async close() {
      for (const path of [...made].reverse()) await session.delete(path).catch(() => undefined)
      await session.close()
    },
  }
}
