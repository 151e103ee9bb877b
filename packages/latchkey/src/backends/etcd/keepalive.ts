/**
 * Lease keepalives over one long-lived bidirectional stream per backend (as etcd's Go client and etcd3's
 * `Lease` do), instead of a stream per renewal: a renewal is then one message each way. Each call still has its
 * own deadline, and a stream that errors, ends or misses a deadline is dropped and reopened by the next call.
 */
import type { EtcdClient, EtcdDuplex } from './etcd-client.js'

interface Pending {
  resolve(ttl: number): void
  reject(error: Error): void
}

type Stream = EtcdDuplex<{ ID: string }, { ID: string; TTL: string }>

/** One open stream and the callers waiting on it, per lease id in send order (etcd answers in order). */
interface Channel {
  readonly stream: Stream
  readonly pending: Map<string, Pending[]>
}

/** The keepalive stream of one backend. */
export class KeepAlives {
  private channel: Promise<Channel> | undefined
  /** The open channel, so a late drop of an older one cannot clear a newer one. */
  private current: Channel | undefined

  constructor(
    private readonly client: EtcdClient,
    private readonly timeoutMs: number,
  ) {}

  /** One keepalive: the lease's TTL in seconds as etcd now has it, 0 when etcd no longer has the lease. */
  async once(leaseId: string): Promise<number> {
    const channel = await this.open()
    return new Promise<number>((resolve, reject) => {
      const timer = setTimeout(() => {
        this.drop(channel, new Error(`lease keepalive got no answer within ${this.timeoutMs} ms`))
      }, this.timeoutMs)
      const settle = (): void => clearTimeout(timer)
      const entry: Pending = {
        resolve: (ttl) => {
          settle()
          resolve(ttl)
        },
        reject: (error) => {
          settle()
          reject(error)
        },
      }
      const queue = channel.pending.get(leaseId) ?? []
      queue.push(entry)
      channel.pending.set(leaseId, queue)
      channel.stream.write({ ID: leaseId })
    })
  }

  /** Ends the stream; pending calls fail. */
  close(): void {
    const opening = this.channel
    this.channel = undefined
    opening?.then(
      (channel) => this.drop(channel, new Error('the etcd backend was closed')),
      () => {},
    )
  }

  private open(): Promise<Channel> {
    if (this.channel !== undefined) return this.channel
    const opening = this.client.leaseClient.leaseKeepAlive().then((stream) => {
      const channel: Channel = { stream, pending: new Map() }
      stream.on('data', (response) => answer(channel, response.ID, Number(response.TTL)))
      stream.on('error', (error) => this.drop(channel, error))
      stream.on('end', () => this.drop(channel, new Error('lease keepalive stream ended')))
      this.current = channel
      return channel
    })
    this.channel = opening
    opening.catch(() => {
      if (this.channel === opening) this.channel = undefined // a failed open is retried by the next call
    })
    return opening
  }

  /** Forgets `channel` (if current) and fails its pending calls: their answers would never be matched. */
  private drop(channel: Channel, error: Error): void {
    if (this.current === channel) {
      this.current = undefined
      this.channel = undefined
    }
    const all = [...channel.pending.values()].flat()
    channel.pending.clear()
    for (const entry of all) entry.reject(error)
    try {
      // Half-close (not cancel): etcd3 would treat a cancelled stream as a failed host and reset its channels.
      channel.stream.end()
    } catch {
      // Already closed.
    }
  }
}

function answer(channel: Channel, leaseId: string, ttl: number): void {
  const queue = channel.pending.get(leaseId)
  const first = queue?.shift()
  if (queue?.length === 0) channel.pending.delete(leaseId)
  first?.resolve(ttl)
}
