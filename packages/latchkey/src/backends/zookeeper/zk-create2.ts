/**
 * ZooKeeper's CREATE2 (op code 15, servers 3.5+): a create whose reply carries the new node's stat, so a lock
 * granted at its create needs no second request for its token (czxid) and lease start (mtime). node-zookeeper-client
 * 1.x sends only CREATE (op 1); this adds CREATE2 to it from outside, through the two seams it has:
 *
 * - the request goes through the client's own queue (same xid order, same session), with a header that writes
 *   op 15 on the wire but reads as CREATE (op 1) when the client picks the decoder for the reply;
 * - CREATE's reply decoder (`jute.protocol.CreateResponse`, looked up by the client for every reply) is replaced
 *   once by a subclass that also keeps a view of the bytes after the path, unread: the CREATE2 callback reads the
 *   stat from them. Every other reply (CREATE's, a multi's) decodes exactly as before.
 *
 * Used only for a client of the node-zookeeper-client copy latchkey loads (its jute module is the one patched);
 * any other client, and a server that answers CREATE2 with "unimplemented" (3.4), gets `undefined`: the caller
 * falls back to CREATE followed by a read of the stat.
 */
import { createRequire } from 'node:module'
import type { ZkClient, ZkErrorLike, ZkStat } from './zk-client.js'

const require = createRequire(import.meta.url)

const CREATE = 1
const CREATE2 = 15
/** KeeperException.Code.UNIMPLEMENTED: a server older than 3.5. */
const UNIMPLEMENTED = -6
/** A serialized Stat: 6 longs and 5 ints. */
const STAT_BYTES = 68

interface JuteRecord {
  byteLength(): number
  serialize(buffer: Buffer, offset: number): number
  deserialize(buffer: Buffer, offset: number): number
  setChrootPath(path: string | undefined): void
  [field: string]: unknown
}
type RecordClass = new () => JuteRecord
interface Jute {
  protocol: Record<string, RecordClass>
  data: Record<string, RecordClass>
  Request: new (header: unknown, payload: unknown) => unknown
}
interface Manager {
  queue(request: unknown, callback: (error: ZkErrorLike | null, response: { payload?: JuteRecord }) => void): void
}
interface Loaded {
  readonly jute: Jute
  readonly Manager: abstract new (...args: never[]) => Manager
  readonly acls: readonly { toRecord(): unknown }[]
}

let loaded: Loaded | null | undefined
/** Set once a server answered "unimplemented": every later create falls back (one process, one server version). */
let unsupported = false

/** The client copy's internals, with CREATE's decoder extended (once); null when they are not where expected. */
function load(): Loaded | null {
  if (loaded !== undefined) return loaded
  try {
    const jute = require('node-zookeeper-client/lib/jute/index.js') as Jute
    const Manager = require('node-zookeeper-client/lib/ConnectionManager.js') as Loaded['Manager']
    const { OPEN_ACL_UNSAFE } = require('node-zookeeper-client/lib/ACL.js') as { OPEN_ACL_UNSAFE: Loaded['acls'] }
    const Base = jute.protocol.CreateResponse
    const Stat = jute.data.Stat
    if (Base === undefined || Stat === undefined || jute.protocol.CreateRequest === undefined) {
      loaded = null
      return loaded
    }
    if (!(Base as { keepsTrailing?: boolean }).keepsTrailing) {
      // Keeps (without reading) what follows the path in the buffer: a CREATE2 reply's stat, which only the
      // CREATE2 callback parses. Elsewhere it is nothing (a CREATE reply) or the next results of a multi, which
      // the multi goes on to read as before.
      class CreateResponseKeepingTrailing extends Base {
        static readonly keepsTrailing = true
        override deserialize(buffer: Buffer, offset: number): number {
          const read = super.deserialize(buffer, offset)
          this.trailing = buffer.subarray(offset + read)
          return read
        }
      }
      jute.protocol.CreateResponse = CreateResponseKeepingTrailing
    }
    loaded = { jute, Manager, acls: OPEN_ACL_UNSAFE }
  } catch {
    loaded = null
  }
  return loaded
}

/** A request header that writes CREATE2 on the wire and reads as CREATE to the client's reply decoder. */
function create2Header() {
  return {
    xid: 0,
    type: CREATE,
    /** The op code actually sent (for anyone counting requests by type). */
    wireType: CREATE2,
    byteLength: () => 8,
    serialize(buffer: Buffer, offset: number): number {
      buffer.writeInt32BE(this.xid, offset)
      buffer.writeInt32BE(CREATE2, offset + 4)
      return 8
    },
  }
}

/** Whether CREATE2 can be sent on `client` (see the module comment); false sends CREATE instead. */
export function canCreate2(client: ZkClient): boolean {
  const internals = unsupported ? null : load()
  return (
    internals !== null && (client as { connectionManager?: unknown }).connectionManager instanceof internals.Manager
  )
}

/**
 * Sends CREATE2 for `path` on `client`'s session (only where {@link canCreate2}); the callback gets the created
 * path and its stat.
 */
export function sendCreate2(
  client: ZkClient,
  path: string,
  data: Buffer,
  mode: number,
  callback: (error: ZkErrorLike | null, result: { path: string; stat: ZkStat }) => void,
): void {
  const { jute, acls } = load() as Loaded
  const manager = (client as unknown as { connectionManager: Manager }).connectionManager
  const payload = new (jute.protocol.CreateRequest as RecordClass)()
  payload.path = path
  payload.data = data
  payload.acl = acls.map((acl) => acl.toRecord())
  payload.flags = mode
  const none = undefined as unknown as { path: string; stat: ZkStat }
  manager.queue(new jute.Request(create2Header(), payload), (error, response) => {
    if (error !== null) {
      if (error.code === UNIMPLEMENTED) unsupported = true
      callback(error, none)
      return
    }
    const reply = response.payload
    const trailing = reply?.trailing as Buffer | undefined
    if (reply === undefined || trailing === undefined || trailing.length < STAT_BYTES) {
      // Not reached with a 3.5+ server: a CREATE2 reply always carries the stat.
      callback({ code: UNIMPLEMENTED, name: 'UNIMPLEMENTED', message: 'CREATE2 reply without a stat' }, none)
      return
    }
    const stat = new (jute.data.Stat as RecordClass)()
    stat.deserialize(trailing, 0)
    callback(null, { path: reply.path as string, stat: stat as unknown as ZkStat })
  })
}
