/**
 * latchkey's own ZooKeeper client: the requests a lock needs (with CREATE2), and nothing else, on the session of
 * zk-wire-connection.ts. It replaced node-zookeeper-client for the sessions the backend opens itself: that client
 * was an eighth of a waiting process's CPU in the 10-waiter profile (a record object walked field by field per request
 * and reply, a retry loop per request, a stream pipeline per read), and latchkey already replaced its reads, its
 * writes, its reply decoders and its CREATE from outside. A client handed in by the user is still used as it is.
 * Each request keeps node-zookeeper-client's callback shapes, which the backend was written for. No chroot (the
 * backend folds it into its root), no auth, no read-only mode.
 */
import type { ZkClient, ZkErrorLike, ZkStat, ZkTransaction } from '../zk-client.js'
import { OP, readChildren, readStat } from './zk-jute.js'
import {
  createFrame,
  deleteFrame,
  type MultiOp,
  multiFrame,
  readCreated,
  readCreated2,
  readData,
  readFrame,
  readMulti,
  setDataFrame,
} from './zk-requests.js'
import type { Watcher } from './zk-watches.js'
import { ZkWireConnection } from './zk-wire-connection.js'
import { ZkWireError } from './zk-wire-error.js'

type Err = ZkErrorLike | null

const NO_NODE = -101

export class ZkWireClient extends ZkWireConnection implements ZkClient {
  create(path: string, data: Buffer, mode: number, callback: (error: Err, path: string) => void): void {
    this.send(
      (xid) => createFrame(xid, OP.create, path, data, mode),
      'create',
      path,
      (e, f, at) => callback(e, e === null ? readCreated(f, at) : ''),
    )
  }

  /** CREATE2 (3.5+): the created path and the new node's stat in one reply. */
  create2(
    path: string,
    data: Buffer,
    mode: number,
    callback: (error: Err, result: { path: string; stat: ZkStat }) => void,
  ): void {
    this.send(
      (xid) => createFrame(xid, OP.create2, path, data, mode),
      'create2',
      path,
      (e, f, at) => callback(e, e === null ? readCreated2(f, at) : (undefined as never)),
    )
  }

  remove(path: string, version: number, callback: (error: Err) => void): void {
    this.send(
      (xid) => deleteFrame(xid, path, version),
      'delete',
      path,
      (e) => callback(e),
    )
  }

  /** The node's stat, null when it does not exist (as node-zookeeper-client answers). */
  exists(path: string, callback: (error: Err, stat: ZkStat) => void): void {
    this.send(
      (xid) => readFrame(xid, OP.exists, path, false),
      'exists',
      path,
      (e, f, at) => {
        if (e?.code === NO_NODE) callback(null, null as unknown as ZkStat)
        else callback(e, e === null ? readStat(f, at) : (undefined as never))
      },
    )
  }

  getChildren(path: string, callback: (error: Err, children: string[]) => void): void
  getChildren(path: string, watcher: Watcher, callback: (error: Err, children: string[]) => void): void
  getChildren(path: string, a: Watcher | ((e: Err, c: string[]) => void), b?: (e: Err, c: string[]) => void): void {
    const watcher = b === undefined ? undefined : (a as Watcher)
    const callback = (b ?? a) as (e: Err, c: string[]) => void
    this.send(
      (xid) => readFrame(xid, OP.getChildren, path, watcher !== undefined),
      'getChildren',
      path,
      (e, f, at) => {
        if (e !== null) return callback(e, [])
        if (watcher !== undefined) this.watches.add('child', path, watcher)
        callback(null, readChildren(f, at))
      },
    )
  }

  getData(path: string, callback: (error: Err, data: Buffer, stat: ZkStat) => void): void
  getData(path: string, watcher: Watcher, callback: (error: Err, data: Buffer, stat: ZkStat) => void): void
  getData(
    path: string,
    a: Watcher | ((e: Err, d: Buffer, s: ZkStat) => void),
    b?: (e: Err, d: Buffer, s: ZkStat) => void,
  ): void {
    const watcher = b === undefined ? undefined : (a as Watcher)
    const callback = (b ?? a) as (e: Err, d: Buffer, s: ZkStat) => void
    this.send(
      (xid) => readFrame(xid, OP.getData, path, watcher !== undefined),
      'getData',
      path,
      (e, f, at) => {
        if (e !== null) return callback(e, Buffer.alloc(0), undefined as never)
        if (watcher !== undefined) this.watches.add('data', path, watcher)
        const { data, stat } = readData(f, at)
        callback(null, data, stat)
      },
    )
  }

  setData(path: string, data: Buffer | null, version: number, callback: (error: Err, stat: ZkStat) => void): void {
    this.send(
      (xid) => setDataFrame(xid, path, data, version),
      'setData',
      path,
      (e, f, at) => callback(e, e === null ? readStat(f, at) : (undefined as never)),
    )
  }

  transaction(): ZkTransaction {
    const ops: MultiOp[] = []
    const tx: ZkTransaction = {
      create: (path, data, mode) => {
        ops.push({ op: 'create', path, data, mode })
        return tx
      },
      setData: (path, data, version) => {
        ops.push({ op: 'setData', path, data, version })
        return tx
      },
      commit: (callback) => {
        const what = ops.map((o) => `${o.op} ${o.path}`).join(', ')
        this.send(
          (xid) => multiFrame(xid, ops),
          'multi',
          what,
          (e, f, at) => {
            if (e !== null) return callback(e, [])
            const { results, err } = readMulti(f, at)
            callback(err === 0 ? null : new ZkWireError(err, `multi ${what}`), results)
          },
        )
      },
    }
    return tx
  }
}
