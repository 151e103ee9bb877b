/**
 * A loopback TCP proxy that can hold a server's replies and deliver everything held, on each connection, as one
 * write: after `holdReplies()`, the client's bytes still go through at once, but the server's are kept until
 * `flush()`. The client then reads a reply and whatever the server sent after it (a FATAL, then the close) in one
 * chunk, as a client on a loaded host can when a session is terminated right after it answered.
 */
import type { Socket } from 'node:net'
import { LoopbackProxy } from './loopback-proxy.js'

interface Link {
  readonly client: Socket
  readonly held: Buffer[]
  serverEnded: boolean
}

export class BatchedReplyProxy extends LoopbackProxy {
  private holding = false
  private readonly links = new Set<Link>()

  /** From now on the server's bytes are kept, on every connection, until {@link flush}. */
  holdReplies(): void {
    this.holding = true
  }

  /** Bytes held so far, over all connections. */
  get heldBytes(): number {
    return [...this.links].reduce((n, link) => n + link.held.reduce((m, b) => m + b.length, 0), 0)
  }

  /** How many connections with held bytes the server has closed (what it sent before is held too). */
  get serverEndedWithHeld(): number {
    return [...this.links].filter((link) => link.serverEnded && link.held.length > 0).length
  }

  /**
   * Stops holding and delivers each connection's held bytes as one write; a connection whose server has closed
   * is closed after them.
   */
  flush(): void {
    this.holding = false
    for (const link of this.links) {
      const bytes = Buffer.concat(link.held.splice(0))
      if (link.client.destroyed) continue
      if (bytes.length > 0) link.client.write(bytes)
      if (link.serverEnded) link.client.end()
    }
  }

  async close(): Promise<void> {
    for (const link of this.links) link.client.destroy()
    this.links.clear()
    await this.stopListening()
  }

  protected accept(client: Socket, upstream: Socket): void {
    const link: Link = { client, held: [], serverEnded: false }
    this.links.add(link)
    client.on('data', (chunk: Buffer) => upstream.write(chunk))
    upstream.on('data', (chunk: Buffer) => {
      if (this.holding || link.held.length > 0) link.held.push(chunk)
      else if (!client.destroyed) client.write(chunk)
    })
    upstream.on('end', () => {
      link.serverEnded = true
      if (!this.holding && link.held.length === 0) client.end()
    })
    const drop = (): void => {
      client.destroy()
      upstream.destroy()
      this.links.delete(link)
    }
    client.on('close', drop)
    client.on('error', drop)
    upstream.on('error', () => client.destroy())
  }
}
