/**
 * A loopback TCP proxy in front of one Redis server that can hold the replies of new connections: after
 * `holdNewConnections()`, a connection it accepts forwards the client's commands at once but keeps the server's
 * replies until `releaseHeld()`. A client connecting meanwhile is connected but stuck in its handshake, as a
 * client on a loaded host is for hundreds of ms. Connections accepted before (or after the release) pass through.
 */
import type { Socket } from 'node:net'
import { LoopbackProxy } from './loopback-proxy.js'

interface Held {
  readonly client: Socket
  readonly chunks: Buffer[]
}

export class HeldReplyProxy extends LoopbackProxy {
  private holding = false
  private readonly held: Held[] = []
  private readonly sockets = new Set<Socket>()

  get url(): string {
    return `redis://127.0.0.1:${this.port}`
  }

  /** Connections accepted from now on keep the server's replies until {@link releaseHeld}. */
  holdNewConnections(): void {
    this.holding = true
  }

  /** How many held connections have a reply waiting (their client has started its handshake). */
  get heldWithReplies(): number {
    return this.held.filter((h) => h.chunks.length > 0).length
  }

  /** Delivers the held replies in order; from now on every connection passes through. */
  releaseHeld(): void {
    this.holding = false
    for (const { client, chunks } of this.held.splice(0)) {
      if (!client.destroyed) for (const chunk of chunks) client.write(chunk)
    }
  }

  async close(): Promise<void> {
    for (const s of this.sockets) s.destroy()
    this.sockets.clear()
    await this.stopListening()
  }

  protected accept(client: Socket, upstream: Socket): void {
    this.sockets.add(client)
    this.sockets.add(upstream)
    const hold: Held | undefined = this.holding ? { client, chunks: [] } : undefined
    if (hold !== undefined) this.held.push(hold)
    client.on('data', (chunk: Buffer) => upstream.write(chunk))
    upstream.on('data', (chunk: Buffer) => {
      // Held until released; the release empties `held`, so later chunks pass through after the held ones.
      if (hold !== undefined && this.held.includes(hold)) hold.chunks.push(chunk)
      else if (!client.destroyed) client.write(chunk)
    })
    const end = (): void => {
      client.destroy()
      upstream.destroy()
      this.sockets.delete(client)
      this.sockets.delete(upstream)
    }
    client.on('close', end)
    upstream.on('close', end)
    client.on('error', end)
    upstream.on('error', end)
  }
}
