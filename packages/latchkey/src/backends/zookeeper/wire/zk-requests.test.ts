/**
 * The wire client's request frames, byte for byte against node-zookeeper-client's encoder (an independent
 * implementation of the same jute records), and its multi reply decoder against a reply built by hand.
 */
import { createRequire } from 'node:module'
import { describe, expect, it } from 'vitest'
import { OP } from './zk-jute.js'
import {
  createFrame,
  deleteFrame,
  multiFrame,
  readFrame,
  readMulti,
  setDataFrame,
  setWatchesFrame,
} from './zk-requests.js'

const require = createRequire(import.meta.url)

interface Rec {
  [field: string]: unknown
}
type RecordClass = new (...args: unknown[]) => Rec
const jute = require('node-zookeeper-client/lib/jute/index.js') as {
  protocol: Record<string, RecordClass>
  Request: new (header: unknown, payload: unknown) => { toBuffer(): Buffer }
  TransactionRequest: new (ops: unknown[]) => unknown
}
const { OPEN_ACL_UNSAFE } = require('node-zookeeper-client/lib/ACL.js') as {
  OPEN_ACL_UNSAFE: { toRecord(): unknown }[]
}

/** node-zookeeper-client's frame for a request of `type` with `fields` set on a record of `payload`'s class. */
function theirs(xid: number, type: number, payload: string | unknown, fields: Rec = {}): Buffer {
  const header = new (jute.protocol.RequestHeader as RecordClass)()
  header.xid = xid
  header.type = type
  let record: unknown = payload
  if (typeof payload === 'string') {
    const r = new (jute.protocol[payload] as RecordClass)()
    Object.assign(r, fields)
    record = r
  }
  return new jute.Request(header, record).toBuffer()
}

describe('zookeeper wire requests', () => {
  it('create and create2 frames are the client library’s CreateRequest with the open ACL', () => {
    const data = Buffer.from('lease:1234')
    const path = '/latchkey/ns%3Aname/_c_owner-mutex-'
    const fields = { path, data, acl: OPEN_ACL_UNSAFE.map((a) => a.toRecord()), flags: 3 }
    expect(createFrame(7, OP.create, path, data, 3)).toEqual(theirs(7, OP.create, 'CreateRequest', fields))
    expect(createFrame(8, OP.create2, path, data, 3)).toEqual(theirs(8, OP.create2, 'CreateRequest', fields))
  })

  it('delete, getData, getChildren, exists and setData frames match, with and without a watch, null data too', () => {
    expect(deleteFrame(3, '/a/b', -1)).toEqual(theirs(3, OP.delete, 'DeleteRequest', { path: '/a/b', version: -1 }))
    for (const watch of [true, false]) {
      expect(readFrame(4, OP.getData, '/a', watch)).toEqual(
        theirs(4, OP.getData, 'GetDataRequest', { path: '/a', watch }),
      )
      // GetChildrenRequest (op 8) has GetChildren2Request's fields; the library only has the latter.
      expect(readFrame(5, OP.getChildren, '/é', watch)).toEqual(
        theirs(5, OP.getChildren, 'GetChildren2Request', { path: '/é', watch }),
      )
      expect(readFrame(6, OP.exists, '/a', watch)).toEqual(theirs(6, OP.exists, 'ExistsRequest', { path: '/a', watch }))
    }
    const data = Buffer.from([1, 2, 3])
    expect(setDataFrame(9, '/a', data, 4)).toEqual(
      theirs(9, OP.setData, 'SetDataRequest', { path: '/a', data, version: 4 }),
    )
    expect(setDataFrame(9, '/a', null, -1)).toEqual(
      theirs(9, OP.setData, 'SetDataRequest', { path: '/a', data: null, version: -1 }),
    )
  })

  it('a multi frame is the client library’s TransactionRequest', () => {
    const data = Buffer.from('x')
    const ours = multiFrame(11, [
      { op: 'create', path: '/l/_c_a-', data, mode: 3 },
      { op: 'setData', path: '/l', data: Buffer.alloc(0), version: -1 },
    ])
    const tx = new jute.TransactionRequest([
      { type: OP.create, path: '/l/_c_a-', data, acls: OPEN_ACL_UNSAFE, mode: 3 },
      { type: OP.setData, path: '/l', data: Buffer.alloc(0), version: -1 },
    ])
    expect(ours).toEqual(theirs(11, OP.multi, tx))
  })

  it('setWatches carries the relative zxid and the three path lists', () => {
    const zxid = Buffer.from([0, 0, 0, 1, 0, 0, 0, 2])
    const frame = setWatchesFrame(zxid, ['/d'], [], ['/c1', '/c2'])
    const fields = { relativeZxid: zxid, dataWatches: ['/d'], existWatches: [], childWatches: ['/c1', '/c2'] }
    expect(frame).toEqual(theirs(-8, OP.setWatches, 'SetWatches', fields))
  })

  it('reads a multi reply: results in order, and the code of the op that failed a multi', () => {
    const stat = Buffer.alloc(68, 0)
    stat.writeInt32BE(5, 32) // version
    const path = Buffer.from('/l/_c_a-0000000001')
    const header = (type: number, done: boolean, err: number): Buffer => {
      const b = Buffer.alloc(9)
      b.writeInt32BE(type, 0)
      b.writeUInt8(done ? 1 : 0, 4)
      b.writeInt32BE(err, 5)
      return b
    }
    const length = Buffer.alloc(4)
    length.writeInt32BE(path.length)
    const committed = Buffer.concat([
      header(OP.create, false, 0),
      length,
      path,
      header(OP.setData, false, 0),
      stat,
      header(-1, true, -1),
    ])
    const ok = readMulti(committed, 0)
    expect(ok.err).toBe(0)
    expect(ok.results).toEqual([
      { type: OP.create, path: '/l/_c_a-0000000001' },
      { type: OP.setData, stat: expect.objectContaining({ version: 5 }) },
    ])
    const code = (c: number): Buffer => {
      const b = Buffer.alloc(4)
      b.writeInt32BE(c)
      return b
    }
    // A failed multi answers an ErrorResult per op: RUNTIMEINCONSISTENCY (-2) for those that did not fail themselves.
    const failed = Buffer.concat([
      header(-1, false, -1),
      code(-2),
      header(-1, false, -1),
      code(-101),
      header(-1, true, -1),
    ])
    expect(readMulti(failed, 0).err).toBe(-101)
  })
})
