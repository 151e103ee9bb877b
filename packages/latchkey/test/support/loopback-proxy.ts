/**
 * What the tests' TCP proxies share: listening on a free loopback port, connecting each accepted client to the
 * one server behind, and closing. Each proxy says only what it does to the bytes in between (`accept`).
 */
import { connect, createServer, type Server, type Socket } from 'node:net'

export abstract class LoopbackProxy {
  port = 0
  private server: Server | undefined

  constructor(
    private readonly targetPort: number,
    private readonly targetHost = '127.0.0.1',
  ) {}

  async start(): Promise<this> {
    const server = createServer((client) => this.accept(client, connect(this.targetPort, this.targetHost)))
    this.server = server
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
    const address = server.address()
    this.port = typeof address === 'object' && address !== null ? address.port : 0
    return this
  }

  /** A client accepted, and its connection to the server (already being opened). */
  protected abstract accept(client: Socket, upstream: Socket): void

  /** Stops listening; the subclass ends its own connections first. */
  protected async stopListening(): Promise<void> {
    await new Promise<void>((resolve) => (this.server ? this.server.close(() => resolve()) : resolve()))
  }
}
