import { createConnection, createServer, type Server, type Socket } from 'node:net'

/**
 * How a proxy treats traffic: `pass`; `stall-down` holds the server's replies in a buffer (a reply delayed in
 * the network: the request reaches the server, the answer comes late); `stall-both` holds both directions (a
 * silent partition: the connection stays open, nothing gets through, and everything held arrives after the heal,
 * as TCP retransmission delivers it once a blackhole route is removed). Bytes are never dropped: dropping part of
 * a stream is not what a network does to an established TCP connection, and it would break the protocol framing.
 */
export type ProxyMode = 'pass' | 'stall-down' | 'stall-both'

interface Pipe {
  client: Socket
  server: Socket
  /** Held client -> server bytes. */
  up: Buffer[]
  /** Held server -> client bytes. */
  down: Buffer[]
}

/**
 * A userspace TCP proxy in front of one upstream (this machine has no netem, so delays and partitions of one
 * client's connections are made here). One proxy per client and upstream, so a fault hits one client only.
 */
export class FaultProxy {
  private mode: ProxyMode = 'pass'
  private readonly pipes = new Set<Pipe>()
  private server: Server | undefined
  port = 0

  /**
   * `delayMs` > 0 makes the proxy a slow link: every chunk, both ways, is forwarded that much later (in order).
   * The lab uses it as the replication link of a Redis replica, so the replica is that far behind its primary.
   */
  constructor(
    private readonly upstreamHost: string,
    private upstreamPort: number,
    private readonly delayMs = 0,
  ) {}

  async start(): Promise<number> {
    const server = createServer((client) => this.accept(client))
    this.server = server
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
    const address = server.address()
    this.port = typeof address === 'object' && address !== null ? address.port : 0
    return this.port
  }

  /** Switches mode; going back to `pass` delivers whatever was held, in order. */
  set(mode: ProxyMode): void {
    this.mode = mode
    if (mode === 'pass' || mode === 'stall-down') for (const pipe of this.pipes) flush(pipe.up, pipe.server)
    if (mode === 'pass') for (const pipe of this.pipes) flush(pipe.down, pipe.client)
  }

  /**
   * Sends new connections to another upstream port and cuts the current ones (their clients reconnect through the
   * proxy and reach the new upstream): a failover behind a stable address, as a virtual IP or a Sentinel-aware
   * client gives. Bytes held or delayed on the cut connections are dropped with them, as a crash drops them.
   */
  retarget(port: number): void {
    this.upstreamPort = port
    for (const pipe of this.pipes) {
      pipe.client.destroy()
      pipe.server.destroy()
    }
    this.pipes.clear()
  }

  async close(): Promise<void> {
    for (const pipe of this.pipes) {
      pipe.client.destroy()
      pipe.server.destroy()
    }
    this.pipes.clear()
    await new Promise<void>((resolve) => (this.server === undefined ? resolve() : this.server.close(() => resolve())))
  }

  private accept(client: Socket): void {
    const server = createConnection({ host: this.upstreamHost, port: this.upstreamPort })
    const pipe: Pipe = { client, server, up: [], down: [] }
    this.pipes.add(pipe)
    client.setNoDelay(true)
    server.setNoDelay(true)
    const later = (to: Socket, chunk: Buffer): void => {
      if (this.delayMs === 0) to.write(chunk)
      // Timers of equal delay fire in the order they were set, so the stream stays in order.
      else setTimeout(() => to.destroyed || to.write(chunk), this.delayMs)
    }
    client.on('data', (chunk) => {
      if (this.mode === 'stall-both' || pipe.up.length > 0) pipe.up.push(chunk)
      else later(server, chunk)
    })
    server.on('data', (chunk) => {
      if (this.mode !== 'pass' || pipe.down.length > 0) pipe.down.push(chunk)
      else later(client, chunk)
    })
    const end = (): void => {
      this.pipes.delete(pipe)
      client.destroy()
      server.destroy()
    }
    client.on('close', end)
    server.on('close', end)
    client.on('error', end)
    server.on('error', end)
  }
}

function flush(held: Buffer[], to: Socket): void {
  while (held.length > 0) to.write(held.shift()!)
}

/**
 * Puts a proxy in front of every `127.0.0.1:port` (or `localhost:port`) in a backend URL and returns the rewritten
 * URL with the proxies, so one client's whole path to the lock service (every node of it) goes through them.
 */
export async function proxiedUrl(url: string): Promise<{ url: string; proxies: FaultProxy[] }> {
  const proxies: FaultProxy[] = []
  const endpoints = [...url.matchAll(/(127\.0\.0\.1|localhost):(\d+)/g)]
  let rewritten = url
  for (const [whole, host, port] of endpoints) {
    const proxy = new FaultProxy(host!, Number(port))
    const local = await proxy.start()
    proxies.push(proxy)
    rewritten = rewritten.replace(whole, `127.0.0.1:${local}`)
  }
  return { url: rewritten, proxies }
}
