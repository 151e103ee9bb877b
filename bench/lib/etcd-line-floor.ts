/**
 * The floor of latchkey's etcd mutex recipe: the same requests and the same watch, with no lock library. Each process
 * keeps one place in etcd's line per name (its first local waiter's key), follows the name's deletes on one prefix
 * watch, and learns its turn when every key created before its own is gone (create revisions order the line, as in
 * Go's `concurrency.Mutex`). A release that has a local waiter behind it deletes its key and puts that waiter's key
 * in one txn, which also reads the line; without one, it deletes its key. Per acquisition across the processes that
 * is one txn, and one delete event for every process with a place in line.
 *
 * What it leaves out, and latchkey cannot: a lease per TTL and its keepalive on the grant, fencing checks on release
 * (a compare), deadlines and cancellation beyond a timeout, reconnects and resumed watches, a crashed waiter's place,
 * reentrancy and a lock core. So latchkey can at best approach it; where this floor spends more than a target allows,
 * no lock of this recipe meets the target on that host. The other recipe (each waiter watching only the key before
 * it, Go's `waitDeletes`) costs a watch created and cancelled, and a read, per acquisition in the next holder's
 * process: bench/ETCD-CPU.md measures both.
 */

import { prefixRange } from '../../packages/latchkey/src/backends/etcd/keys.js'
import type { Contender, Held } from './contender.js'
import { openWireSession } from './etcd-wire-session.js'

type KeyValue = { key: Buffer; create_revision: string }

/** Deletes remembered for a place whose txn answer arrives after them (the two come on different streams). */
const RECENT = 256

interface Waiter {
  readonly resolve: (held: Held | undefined) => void
  timer: NodeJS.Timeout | undefined
  done: boolean
}

/** One name in this process: its watch, its local waiters, and its one place in etcd's line. */
interface Name {
  readonly prefix: string
  /** The read of every key in line (built once: every txn that puts a key carries it). */
  readonly line: { readonly request_range: { key: Buffer; range_end: Buffer; keys_only: true } }
  readonly ready: Promise<void>
  readonly cancel: () => Promise<void>
  readonly queue: Waiter[]
  /** The key of this process's holder. */
  holding: string | undefined
  /** This process's place in line: its key and the keys still before it. */
  place: { key: string; ahead: Set<string> } | undefined
  /** A txn putting this process's key is out (its answer decides the place). */
  joining: boolean
  readonly recent: Map<string, bigint>
}

/** Opens the floor: one wire client and one lease for the process, keys under `<ns>/line/`. */
export async function etcdLineFloor(url: string, ns: string): Promise<Contender> {
  const session = await openWireSession(url)
  const { client, lease } = session
  const names = new Map<string, Name>()
  let seq = 0

  const open = (key: string): Name => {
    const prefix = `${ns}/line/${encodeURIComponent(key)}/`
    const range = prefixRange(prefix)
    const watcher = client.watch().inRange(range).only('delete').watcher()
    const name: Name = {
      prefix,
      line: { request_range: { key: range.start, range_end: range.end, keys_only: true } },
      ready: new Promise((resolve) => watcher.on('connected', () => resolve())),
      cancel: () => watcher.cancel().catch(() => undefined),
      queue: [],
      holding: undefined,
      place: undefined,
      joining: false,
      recent: new Map(),
    }
    watcher.on('error', () => {})
    watcher.on('delete', (kv: { key: Buffer; mod_revision: string }) =>
      deleted(name, kv.key.toString(), kv.mod_revision),
    )
    names.set(key, name)
    return name
  }

  const deleted = (name: Name, key: string, modRevision: string): void => {
    name.recent.set(key, BigInt(modRevision))
    if (name.recent.size > RECENT) name.recent.delete(name.recent.keys().next().value as string)
    const place = name.place
    if (place?.ahead.delete(key) && place.ahead.size === 0) grant(name)
  }

  /** Takes the place `key` put at `revision`, the line then being `line`; granted at once when nothing is before it. */
  const placed = (name: Name, key: string, revision: bigint, line: readonly KeyValue[]): void => {
    const ahead = new Set<string>()
    for (const kv of line) {
      const k = kv.key.toString()
      if (BigInt(kv.create_revision) < revision && (name.recent.get(k) ?? -1n) <= revision) ahead.add(k)
    }
    name.place = { key, ahead }
    if (ahead.size === 0) grant(name)
  }

  const grant = (name: Name): void => {
    const place = name.place
    if (place === undefined) return
    name.place = undefined
    const waiter = name.queue.shift()
    if (waiter === undefined || waiter.done) {
      // The head gave up while its key was in line: the key goes, and the next local waiter joins.
      inBackground(remove(place.key).then(() => joinIfIdle(name)))
      return
    }
    waiter.done = true
    clearTimeout(waiter.timer)
    name.holding = place.key
    waiter.resolve({ release: () => release(name, place.key) })
  }

  const nextKey = (name: Name): string => `${name.prefix}${lease}-${++seq}`
  const remove = (key: string) => client.kv.txn({ success: [{ request_delete_range: { key: Buffer.from(key) } }] })
  /**
   * Runs a join or removal nobody awaits. One that fails (the client closed as a cell ends, with a join still out)
   * leaves the local waiters to their timeouts, where an unhandled rejection would end the worker.
   */
  const inBackground = (work: Promise<unknown>): void => {
    work.catch(() => undefined)
  }
  const putOp = (key: string) => ({ request_put: { key: Buffer.from(key), value: Buffer.alloc(0), lease } })
  /** The waiters at the head of the queue that gave up go (their timers resolved them already). */
  const dropGivenUp = (name: Name): void => {
    while (name.queue[0]?.done === true) name.queue.shift()
  }

  /** Puts this process's key in line for its first local waiter, unless it holds or already has a place. */
  const joinIfIdle = async (name: Name): Promise<void> => {
    dropGivenUp(name)
    if (name.queue.length === 0 || name.holding !== undefined || name.place !== undefined || name.joining) return
    name.joining = true
    const key = nextKey(name)
    const res = await client.kv.txn({ success: [putOp(key), name.line] })
    name.joining = false
    placed(name, key, BigInt(res.header.revision), res.responses[1]?.response_range?.kvs ?? [])
  }

  const release = async (name: Name, key: string): Promise<void> => {
    name.holding = undefined
    dropGivenUp(name)
    if (name.queue.length === 0) {
      await remove(key)
      return
    }
    // The next local waiter goes in line with this release: one txn, as latchkey's releaseAndJoin.
    const next = nextKey(name)
    name.joining = true
    const res = await client.kv.txn({
      success: [{ request_delete_range: { key: Buffer.from(key) } }, putOp(next), name.line],
    })
    name.joining = false
    placed(name, next, BigInt(res.header.revision), res.responses[2]?.response_range?.kvs ?? [])
  }

  return {
    async acquire(key, waitMs): Promise<Held | undefined> {
      const name = names.get(key) ?? open(key)
      await name.ready
      return new Promise<Held | undefined>((resolve) => {
        const waiter: Waiter = { resolve, timer: undefined, done: false }
        waiter.timer = setTimeout(() => {
          if (waiter.done) return
          waiter.done = true
          resolve(undefined)
          // A head with a place keeps it until its turn (grant then passes it on): rare, at a window's end only.
        }, waitMs)
        name.queue.push(waiter)
        inBackground(joinIfIdle(name))
      })
    },
    async close() {
      await Promise.all([...names.values()].map((n) => n.cancel()))
      await session.close()
    },
  }
}
