import { BackendUnavailableError, isLockError } from '../../errors.js'
import { redactText, redactUrl } from '../../redact-url.js'
import { openHttp2EtcdClient } from './wire/http2-etcd-client.js'

/** A key as etcd returns it (etcd3 uses decimal strings for int64). */
export interface EtcdKeyValue {
  key: Buffer
  create_revision: string
  mod_revision: string
  version: string
  value: Buffer
  lease: string
}

/** A range response. */
export interface EtcdRangeResponse {
  header: { revision: string }
  kvs: EtcdKeyValue[]
  count: string
}

/** One comparison of a txn (etcd `Compare`; `range_end` compares every key of a range). */
export interface EtcdCompare {
  key: Buffer
  range_end?: Buffer
  target: 'Version' | 'Create' | 'Mod' | 'Lease'
  result: 'Equal' | 'Greater' | 'Less' | 'NotEqual'
  version?: string
  create_revision?: string
  mod_revision?: string
  lease?: string
}

/** A txn request (etcd 3.3+ also nests them: `request_txn`). */
export interface EtcdTxnRequest {
  compare?: EtcdCompare[]
  success?: EtcdRequestOp[]
  failure?: EtcdRequestOp[]
}

/** One operation of a txn branch. */
export interface EtcdRequestOp {
  request_range?: { key: Buffer; range_end?: Buffer; keys_only?: boolean; count_only?: boolean }
  request_put?: { key: Buffer; value: Buffer; lease?: string }
  request_delete_range?: { key: Buffer; range_end?: Buffer }
  request_txn?: EtcdTxnRequest
}

/** A txn response. */
export interface EtcdTxnResponse {
  header: { revision: string }
  succeeded: boolean
  responses: Array<{
    response_range?: EtcdRangeResponse
    response_delete_range?: { deleted: string }
    response_txn?: EtcdTxnResponse
  }>
}

/** A bidirectional gRPC stream (lease keepalive). */
export interface EtcdDuplex<Req, Res> {
  on(event: 'data', listener: (response: Res) => void): unknown
  on(event: 'end', listener: () => void): unknown
  on(event: 'error', listener: (error: Error) => void): unknown
  write(request: Req): unknown
  end(): unknown
}

/** A watcher of etcd3's watch manager. */
export interface EtcdWatcher {
  on(event: 'connected', listener: () => void): unknown
  on(event: 'delete', listener: (kv: EtcdKeyValue) => void): unknown
  on(event: 'error', listener: (error: Error) => void): unknown
  cancel(): Promise<void>
  /**
   * The revision up to which the watch has delivered every event, where the client tracks it without gaps
   * (latchkey's own transport resumes a broken watch from the revision after it); undefined elsewhere (etcd3).
   */
  readonly revision?: string | undefined
}

/** The etcd3 `Etcd3` members used here. */
export interface EtcdClient {
  readonly kv: {
    txn(request: EtcdTxnRequest): Promise<EtcdTxnResponse>
    /**
     * Encodes `request` now and returns what sends it (once), so that a txn known before it is due leaves at once
     * when it is (the release of a mutex that a local waiter joins the line with: mutex-line.ts). Only latchkey's
     * own transport has it; without it the txn is sent by `txn` when due.
     */
    prepareTxn?(request: EtcdTxnRequest): () => Promise<EtcdTxnResponse>
    range(request: { key: Buffer; range_end?: Buffer; keys_only?: boolean }): Promise<EtcdRangeResponse>
  }
  readonly leaseClient: {
    leaseGrant(request: { TTL: number }): Promise<{ ID: string; TTL: string }>
    leaseRevoke(request: { ID: string }): Promise<unknown>
    leaseKeepAlive(): Promise<EtcdDuplex<{ ID: string }, { ID: string; TTL: string }>>
  }
  watch(): {
    inRange(range: { start: Buffer; end: Buffer }): {
      only(...ops: Array<'put' | 'delete'>): { watcher(): EtcdWatcher }
    }
  }
  close(): void
}

/** What opening a client needs. */
export interface OpenOptions {
  hosts: string[]
  callTimeoutMs: number
}

/**
 * Opens the client a backend uses for `hosts`: gRPC on its own HTTP/2 client (`wire/http2-etcd-client.ts`),
 * failing fast (a deadline on every unary call, no retries in the client: the core retries with its own backoff),
 * with quick reconnects of the watch stream and the connection. etcd3 is then not needed.
 */
export function openEtcdClient(options: OpenOptions): EtcdClient {
  return openHttp2EtcdClient(options)
}

/** True for etcd3's "requested lease not found" (the lease expired or was revoked). */
export function isLeaseGone(error: unknown): boolean {
  return error instanceof Error && error.message.includes('requested lease not found')
}

/**
 * Maps a client failure to a retryable `BackendUnavailableError` naming `server` (latchkey errors pass through).
 * grpc-js echoes endpoints in its messages, so URLs in the text lose their credentials.
 */
export function unavailable(error: unknown, what: string, server: string): Error {
  if (isLockError(error)) return error
  const message = redactText(error instanceof Error ? error.message : String(error))
  return new BackendUnavailableError(`etcd backend at ${server}: ${what} failed (${message}); is etcd reachable?`, {
    cause: error,
  })
}

/** The endpoints of an etcd3 client (`http://h1:2379,http://h2:2379`), credentials hidden, for messages. */
export function etcdServers(hosts: readonly string[] | undefined, client: unknown): string {
  const fromClient = (client as { pool?: { options?: { hosts?: unknown } } } | undefined)?.pool?.options?.hosts
  const list = hosts ?? (typeof fromClient === 'string' ? [fromClient] : Array.isArray(fromClient) ? fromClient : [])
  return list.length === 0 ? 'unknown endpoints' : list.map((h) => redactUrl(String(h))).join(',')
}
