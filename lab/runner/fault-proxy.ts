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

  constructor(
    private readonly upstreamHost: string,
    private readonly upstreamPort: number,
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
    client.on('data', (chunk) => {
      if (this.mode === 'stall-both' || pipe.up.length > 0) pipe.up.push(chunk)
      else server.write(chunk)
    })
    server.on('data', (chunk) => {
      if (this.mode !== 'pass' || pipe.down.length > 0) pipe.down.push(chunk)
      else client.write(chunk)
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
