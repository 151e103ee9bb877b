/**
 * The other etcd lock recipe, as a floor: Go's `concurrency.Mutex`, request for request, on latchkey's transport with
 * no library. Every waiter puts its own key and reads the line in one txn; the oldest key (lowest create revision)
 * holds. Any other waiter watches only the key just before its own, from the revision of its read (`waitDelete`), and
 * when that key goes, cancels the watch and reads the line again (`waitDeletes`); release deletes the key. A delete
 * wakes one process, the next holder's, where latchkey's line (etcd-line-floor.ts) wakes every process with a place
 * in line; in exchange each acquisition that waits costs a watch created and cancelled and a second read.
 *
 * Leaner than Go's own code: Go (v3.5) reads the line once more before its first watch and reads its own key after
 * the wait; here the txn's read finds the key to watch and nothing is read after. Left out, as in the other floors:
 * a lease per TTL, fencing checks on release, reconnects and a lock core.
 */

import { prefixRange } from '../../packages/latchkey/src/backends/etcd/keys.js'
import type { Contender, Held } from './contender.js'
import { keepWatchStream, keyRange, openWireSession } from './etcd-wire-session.js'

type KeyValue = { key: Buffer; create_revision: string }

/** Opens the floor: one wire client and one lease for the process, keys under `<ns>/go/`. */
export async function etcdGoMutexFloor(url: string, ns: string): Promise<Contender> {
  const session = await openWireSession(url)
  const { client, lease } = session
  const keeper = await keepWatchStream(client, `${ns}/go-none/`)
  let seq = 0

  /** The key created just before `revision` in `line`, if any (Go: WithLastCreate, WithMaxCreateRev). */
  const before = (line: readonly KeyValue[], revision: bigint): string | undefined => {
    let best: KeyValue | undefined
    for (const kv of line) {
      const created = BigInt(kv.create_revision)
      if (created < revision && (best === undefined || created > BigInt(best.create_revision))) best = kv
    }
    return best?.key.toString()
  }

  /** Resolves true when `key` is deleted after `after` (the read's revision), false at `deadline`. */
  const waitDelete = (key: string, after: string, deadline: number): Promise<boolean> => {
    const watcher = client
      .watch()
      .inRange(keyRange(Buffer.from(key)), after)
      .only('delete')
      .watcher()
    watcher.on('error', () => {})
    return new Promise<boolean>((resolve) => {
      const done = (deleted: boolean): void => {
        clearTimeout(timeout)
        // Go cancels the watch's context: the cancel goes out, nobody waits for its answer.
        void watcher.cancel().catch(() => undefined)
        resolve(deleted)
      }
      const timeout = setTimeout(() => done(false), Math.max(0, deadline - performance.now()))
      watcher.on('delete', () => done(true))
    })
  }

  return {
    async acquire(name, waitMs): Promise<Held | undefined> {
      const prefix = `${ns}/go/${encodeURIComponent(name)}/`
      const keys = prefixRange(prefix)
      const range = { key: keys.start, range_end: keys.end, keys_only: true }
      const key = `${prefix}${lease}-${++seq}`
      const deadline = performance.now() + waitMs
      const put = await client.kv.txn({
        success: [{ request_put: { key: Buffer.from(key), value: Buffer.alloc(0), lease } }, { request_range: range }],
      })
      const mine = BigInt(put.header.revision)
      const held: Held = {
        release: async () => {
          await client.kv.txn({ success: [{ request_delete_range: { key: Buffer.from(key) } }] })
        },
      }
      let line = put.responses[1]?.response_range?.kvs ?? []
      let readAt = put.header.revision
      for (;;) {
        const ahead = before(line, mine)
        if (ahead === undefined) return held
        if (!(await waitDelete(ahead, readAt, deadline))) break
        const read = await client.kv.range(range)
        line = read.kvs
        readAt = read.header.revision
      }
      await held.release()
      return undefined
    },
    async close() {
      await keeper.cancel().catch(() => undefined)
      await session.close()
    },
  }
}
