import type { ServerResponse } from 'node:http'

/**
 * One poll per process for every open `/events` stream: the first subscriber starts it, the last one to leave
 * stops it, and each tick's payload is built once and written to all. (A poll per stream made 1,000 open
 * dashboards 2,000 store reads a second and starved the buyers' requests.) At most `maxStreams` subscribers.
 *
 * @example
 * const feed = new EventFeed(async () => `data: ${JSON.stringify(await read())}\n\n`, 500, 200)
 * if (!feed.add(reply.raw)) refuse(reply, 503, 'TOO_MANY_STREAMS', '...')
 */
export class EventFeed {
  private readonly streams = new Set<ServerResponse>()
  private timer: NodeJS.Timeout | undefined
  /** The last payload sent, for a subscriber who joins between two ticks (no store read of its own). */
  private last: string | undefined
  private busy = false

  /**
   * @param read builds one tick's payload (a whole server-sent event, `data: ...\n\n`)
   * @param intervalMs time between ticks
   * @param maxStreams subscribers accepted at once
   */
  constructor(
    private readonly read: () => Promise<string>,
    private readonly intervalMs: number,
    readonly maxStreams: number,
  ) {}

  /** Open streams. */
  get size(): number {
    return this.streams.size
  }

  /** Subscribes `stream`; false (and nothing written) when `maxStreams` are already open. */
  add(stream: ServerResponse): boolean {
    if (this.streams.size >= this.maxStreams) return false
    this.streams.add(stream)
    if (this.last !== undefined) stream.write(this.last)
    if (this.timer === undefined) {
      this.timer = setInterval(() => void this.tick(), this.intervalMs)
      void this.tick()
    }
    return true
  }

  /** Unsubscribes `stream`; the poll stops with the last one. */
  remove(stream: ServerResponse): void {
    this.streams.delete(stream)
    if (this.streams.size > 0 || this.timer === undefined) return
    clearInterval(this.timer)
    this.timer = undefined
    this.last = undefined
  }

  /** Ends every stream (open streams would keep a server's close() waiting forever) and stops the poll. */
  close(): void {
    for (const stream of [...this.streams]) {
      stream.end()
      this.remove(stream)
    }
  }

  private async tick(): Promise<void> {
    // A slow store must not stack reads up: skip the tick while the previous one is still out.
    if (this.busy) return
    this.busy = true
    let payload: string
    try {
      payload = await this.read()
      this.last = payload
    } catch (error) {
      payload = `event: failure\ndata: ${JSON.stringify(String(error))}\n\n`
    } finally {
      this.busy = false
    }
    for (const stream of this.streams) {
      // A client that does not read gets the next tick instead of an ever-growing buffer here.
      if (!stream.writableNeedDrain) stream.write(payload)
    }
  }
}
