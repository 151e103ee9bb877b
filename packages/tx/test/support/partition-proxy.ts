/**
 * A TCP proxy in front of one participant that the test partitions: `cut()` (or the first request chunk that
 * `cutAfter` matches, forwarded first) stops every byte in both directions on open connections and leaves new
 * ones hanging unanswered, as a network partition does (the caller sees timeouts, not refusals); `heal()` lets
 * new connections through again.
 */
import { connect, createServer, type Server, type Socket } from 'node:net'

export interface PartitionProxy {
  readonly url: string
  readonly isCut: boolean
  cut(): void
  heal(): void
  close(): Promise<void>
}

export async function partitionProxy(target: number, cutAfter?: (chunk: Buffer) => boolean): Promise<PartitionProxy> {
  let cut = false
  let trigger = cutAfter
  const sockets = new Set<Socket>()
  const track = (s: Socket) => {
    sockets.add(s)
    s.on('close', () => sockets.delete(s))
    s.on('error', () => s.destroy())
  }
  const server: Server = createServer((client) => {
    track(client)
    if (cut) return // partitioned: the connection hangs, nothing reaches the participant
    const upstream = connect(target, '127.0.0.1')
    track(upstream)
    client.on('data', (chunk: Buffer) => {
      if (cut) return
      upstream.write(chunk)
      if (trigger?.(chunk)) {
        trigger = undefined
        cut = true
      }
    })
    upstream.on('data', (chunk: Buffer) => {
      if (!cut) client.write(chunk)
    })
    client.on('close', () => upstream.destroy())
    upstream.on('close', () => {
      if (!cut) client.destroy()
    })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const address = server.address()
  const port = typeof address === 'object' && address !== null ? address.port : 0
  return {
    url: `http://127.0.0.1:${port}`,
    get isCut() {
      return cut
    },
    cut: () => {
      cut = true
    },
    heal: () => {
      cut = false
    },
    close: async () => {
      for (const s of sockets) s.destroy()
      await new Promise((resolve) => server.close(resolve))
    },
  }
}
