/**
 * The etcd client a backend opens for `hosts`: the {@link EtcdClient} calls on gRPC over HTTP/2 (`h2-session.ts`)
 * with hand-written protobuf (`etcd-messages.ts`), instead of etcd3 on grpc-js. Measured on the bench machine,
 * etcd3's path (cockatiel policies, metadata, proto-loader's object conversions, grpc-js's call stack) cost
 * more client CPU than etcd took to answer, and client CPU is what a crowd of waiters on a small machine runs
 * out of. Behaviour is etcd3's as configured by this backend before: every unary call has a deadline, nothing
 * is retried in the client (the core retries), a failed connection is dialled again by the next call (next
 * endpoint first), watches resume after a broken stream.
 */
import type { EtcdClient, EtcdDuplex, EtcdTxnRequest, EtcdWatcher } from '../etcd-client.js'
import {
  decodeLease,
  decodeRangeResponse,
  decodeTxnResponse,
  encodeId,
  encodeLeaseGrant,
  encodeRange,
  encodeTxn,
  type RangeRequest,
} from './etcd-messages.js'
import { GrpcConnection, GrpcError, type GrpcStream } from './grpc-http2.js'
import type { ProtoReader } from './protobuf.js'
import { WatchStream } from './watch-stream.js'

const NOTHING = (r: ProtoReader): undefined => {
  while (r.next()) r.skip()
  return undefined
}

/**
 * The backend's client, plus what only this transport offers: a lease's remaining TTL, and a watch that follows on
 * from a read (`after`: the read's revision).
 */
export type WireEtcdClient = Omit<EtcdClient, 'watch'> & {
  readonly leaseClient: { leaseTimeToLive(request: { ID: string }): Promise<{ TTL: string }> }
  watch(): {
    inRange(
      range: { start: Buffer; end: Buffer },
      after?: string,
    ): { only(...ops: Array<'put' | 'delete'>): { watcher(): EtcdWatcher } }
  }
}

/** Opens a client of `hosts` (`http(s)://host:port`) whose unary calls each get `callTimeoutMs`. */
export function openHttp2EtcdClient(options: { hosts: readonly string[]; callTimeoutMs: number }): WireEtcdClient {
  const connection = new GrpcConnection(options.hosts)
  const watches = new WatchStream(connection)
  const ms = options.callTimeoutMs
  const call = <T>(path: string, frame: Buffer, decode: (r: ProtoReader) => T) =>
    connection.unary(path, frame, decode, ms)
  const lease = async (path: string, frame: Buffer) => {
    const res = await call(path, frame, decodeLease)
    if (res.error !== '') throw new GrpcError(9, res.error)
    return res
  }
  return {
    kv: {
      txn: (request: EtcdTxnRequest) => call('/etcdserverpb.KV/Txn', encodeTxn(request), decodeTxnResponse),
      prepareTxn: (request: EtcdTxnRequest) => {
        const frame = encodeTxn(request)
        return () => call('/etcdserverpb.KV/Txn', frame, decodeTxnResponse)
      },
      range: (request: RangeRequest) => call('/etcdserverpb.KV/Range', encodeRange(request), decodeRangeResponse),
    },
    leaseClient: {
      leaseGrant: (request: { TTL: number }) => lease('/etcdserverpb.Lease/LeaseGrant', encodeLeaseGrant(request.TTL)),
      leaseRevoke: (request: { ID: string }) => call('/etcdserverpb.Lease/LeaseRevoke', encodeId(request.ID), NOTHING),
      leaseTimeToLive: (request: { ID: string }) => lease('/etcdserverpb.Lease/LeaseTimeToLive', encodeId(request.ID)),
      leaseKeepAlive: async () => keepAliveDuplex(connection.stream('/etcdserverpb.Lease/LeaseKeepAlive')),
    },
    watch: () => ({
      // `after`: the revision of a read the watch must follow on from (the backend's watches start from now).
      inRange: (range: { start: Buffer; end: Buffer }, after?: string) => ({
        only: (..._ops: Array<'put' | 'delete'>) => ({
          // The backend only ever watches deletes.
          watcher: (): EtcdWatcher => watches.watch(range.start, range.end, after),
        }),
      }),
    }),
    close: () => {
      watches.close()
      connection.close()
    },
  }
}

/** The keepalive stream in the shape `keepalive.ts` uses (etcd3's duplex). */
function keepAliveDuplex(stream: GrpcStream): EtcdDuplex<{ ID: string }, { ID: string; TTL: string }> {
  const duplex: EtcdDuplex<{ ID: string }, { ID: string; TTL: string }> = {
    on(event: 'data' | 'end' | 'error', listener: (value: never) => void) {
      const emit = listener as (value?: unknown) => void
      if (event === 'data') stream.on('message', (r: ProtoReader) => emit(decodeLease(r)))
      else stream.on(event, emit)
      return duplex
    },
    write: (request) => stream.write(encodeId(request.ID)),
    end: () => stream.end(),
  }
  return duplex
}
