/**
 * Delete-only etcd watches multiplexed on one gRPC stream per client, with the events etcd3's watchers emit
 * (`connected`, `delete`, `error`). etcd answers creates in the order they were sent, so a created response is
 * matched to the oldest create awaiting one. A stream that fails is reopened (100 ms backoff doubling to 1 s)
 * and each watch created again from the revision after the last one it saw, so no delete is missed; a
 * `connected` follows, as with etcd3. A watch etcd cancels (compaction) gets `error` and is not resumed.
 */
import { EventEmitter } from 'node:events'
import type { EtcdKeyValue, EtcdWatcher } from '../etcd-client.js'
import { decodeWatchResponse, encodeWatchCancel, encodeWatchCreate, type WatchResponse } from './etcd-messages.js'
import type { GrpcConnection, GrpcStream } from './grpc-http2.js'

const FIRST_BACKOFF_MS = 100
const MAX_BACKOFF_MS = 1_000

/** One watch of a key range. */
class RangeWatcher extends EventEmitter implements EtcdWatcher {
  /** etcd's id, once created on the current stream. */
  id: string | undefined
  /** The last revision this watch has seen everything up to (a resumed watch starts after it). */
  revision: string | undefined
  cancelled = false

  constructor(
    private readonly owner: WatchStream,
    readonly start: Buffer,
    readonly end: Buffer,
  ) {
    super()
  }

  cancel(): Promise<void> {
    return this.owner.cancel(this)
  }
}

/** The watches of one client. */
export class WatchStream {
  private stream: GrpcStream | undefined
  /** Watches whose create was sent on the current stream and not answered yet, oldest first. */
  private creating: RangeWatcher[] = []
  private readonly live = new Map<string, RangeWatcher>()
  /** Watches waiting for the stream to be reopened. */
  private waiting: RangeWatcher[] = []
  private backoffMs = FIRST_BACKOFF_MS
  private retry: NodeJS.Timeout | undefined
  private closed = false

  constructor(private readonly connection: GrpcConnection) {}

  /**
   * A new watch of deletes in `[start, end)`: from now, or from the revision after `after` (every delete since a
   * read at revision `after` comes, as Go's `waitDelete` watches the key a read found).
   */
  watch(start: Buffer, end: Buffer, after?: string): EtcdWatcher {
    const watcher = new RangeWatcher(this, start, end)
    watcher.revision = after
    this.create(watcher)
    return watcher
  }

  private create(watcher: RangeWatcher): void {
    if (this.closed || watcher.cancelled) return
    const stream = this.open()
    if (stream === undefined) {
      this.waiting.push(watcher)
      return
    }
    this.creating.push(watcher)
    const from = watcher.revision === undefined ? undefined : (BigInt(watcher.revision) + 1n).toString()
    stream.write(encodeWatchCreate(watcher.start, watcher.end, from))
  }

  private open(): GrpcStream | undefined {
    if (this.stream !== undefined) return this.stream
    if (this.retry !== undefined) return undefined
    let stream: GrpcStream
    try {
      stream = this.connection.stream('/etcdserverpb.Watch/Watch')
    } catch {
      this.scheduleRetry()
      return undefined
    }
    stream.on('message', (r) => this.onResponse(decodeWatchResponse(r)))
    stream.on('error', () => this.onBroken(stream))
    stream.on('end', () => this.onBroken(stream))
    this.stream = stream
    return stream
  }

  private onResponse(res: WatchResponse): void {
    if (res.created) {
      const watcher = this.creating.shift()
      if (watcher === undefined) return
      if (res.canceled) {
        watcher.emit('error', new Error(`etcd refused the watch: ${res.cancelReason || 'cancelled'}`))
        return
      }
      watcher.id = res.watchId
      watcher.revision = maxRevision(watcher.revision, res.revision)
      this.backoffMs = FIRST_BACKOFF_MS
      if (watcher.cancelled) {
        this.stream?.write(encodeWatchCancel(res.watchId))
        this.endIfIdle()
        return
      }
      this.live.set(res.watchId, watcher)
      watcher.emit('connected')
      return
    }
    const watcher = this.live.get(res.watchId)
    if (watcher === undefined) return
    if (res.canceled) {
      this.live.delete(res.watchId)
      if (!watcher.cancelled) {
        const why = res.compactRevision !== '0' ? `compacted at revision ${res.compactRevision}` : res.cancelReason
        watcher.emit('error', new Error(`etcd cancelled the watch: ${why || 'no reason given'}`))
      }
      this.endIfIdle()
      return
    }
    watcher.revision = maxRevision(watcher.revision, res.revision)
    for (const kv of res.deletes) watcher.emit('delete', kv satisfies EtcdKeyValue)
  }

  /** The stream failed or ended: every watch not cancelled is created again on a new stream, after a pause. */
  private onBroken(stream: GrpcStream): void {
    if (this.stream !== stream) return
    this.stream = undefined
    const resume = [...this.creating, ...this.live.values()].filter((w) => !w.cancelled)
    this.creating = []
    this.live.clear()
    for (const w of resume) w.id = undefined
    this.waiting.push(...resume)
    if (this.waiting.length > 0) this.scheduleRetry()
  }

  private scheduleRetry(): void {
    if (this.closed || this.retry !== undefined) return
    const ms = this.backoffMs
    this.backoffMs = Math.min(this.backoffMs * 2, MAX_BACKOFF_MS)
    this.retry = setTimeout(() => {
      this.retry = undefined
      const again = this.waiting.filter((w) => !w.cancelled)
      this.waiting = []
      for (const w of again) this.create(w)
    }, ms)
    this.retry.unref()
  }

  /** Cancels `watcher`; resolves once etcd was told (its confirmation is not awaited). */
  async cancel(watcher: RangeWatcher): Promise<void> {
    if (watcher.cancelled) return
    watcher.cancelled = true
    this.waiting = this.waiting.filter((w) => w !== watcher)
    if (watcher.id !== undefined && this.live.get(watcher.id) === watcher) {
      this.live.delete(watcher.id)
      this.stream?.write(encodeWatchCancel(watcher.id))
    }
    this.endIfIdle()
  }

  /**
   * With no watch left, the stream is dropped (etcd3 also tears its watch stream down with the last watch). Not
   * half-closed: etcd keeps a watch stream open after the client's end of it, until the call is cancelled.
   */
  private endIfIdle(): void {
    if (this.live.size > 0 || this.creating.length > 0 || this.waiting.length > 0) return
    const stream = this.stream
    if (stream === undefined) return
    this.stream = undefined
    stream.cancel()
  }

  /** Stops everything. */
  close(): void {
    this.closed = true
    clearTimeout(this.retry)
    this.retry = undefined
    this.waiting = []
    this.creating = []
    this.live.clear()
    this.stream?.cancel()
    this.stream = undefined
  }
}

/**
 * The later of two revisions (decimal strings of non-negative int64s, as etcd-messages.ts decodes them), compared
 * without parsing them: every watch response goes through here.
 */
function maxRevision(a: string | undefined, b: string): string {
  if (a === undefined) return b
  return b.length > a.length || (b.length === a.length && b > a) ? b : a
}
