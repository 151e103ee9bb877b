/**
 * A TCP proxy in front of RabbitMQ that can hold back what the broker sends (confirms included) while still
 * passing what the client sends. With it a test knows that a wave of messages reached the broker and is waiting
 * for its confirms when the broker then drops the connection. The broker's close frame is held too, so the test
 * then cuts the socket (`cutHeld`), as a dropped TCP connection looks to the client.
 */
import { createConnection, createServer, type Server, type Socket } from 'node:net'

export interface HoldProxy {
  readonly port: number
  /** Hold broker-to-client bytes of the connections open now (not of later ones); counters restart. */
  hold(): void
  /** Destroys the held connections' sockets: the client sees its connection die, held bytes unseen. */
  cutHeld(): void
  /** Bytes the client sent since hold(), and broker bytes held back since. */
  readonly sentSinceHold: number
  readonly heldBytes: number
  close(): Promise<void>
}

export async function openHoldProxy(target: { host: string; port: number }): Promise<HoldProxy> {
  const sockets = new Set<Socket>()
  const live = new Set<{ held: boolean; end: () => void }>()
  let sentSinceHold = 0
  let heldBytes = 0
  const server: Server = createServer((client) => {
    const upstream = createConnection(target)
    sockets.add(client).add(upstream)
    const state = { held: false, end: () => {} }
    live.add(state)
    client.on('data', (chunk: Buffer) => {
      if (state.held) sentSinceHold += chunk.length
      upstream.write(chunk)
    })
    upstream.on('data', (chunk: Buffer) => {
      if (state.held) heldBytes += chunk.length
      else client.write(chunk)
    })
    const end = () => {
      live.delete(state)
      client.destroy()
      upstream.destroy()
    }
    state.end = end
    client.on('close', end).on('error', end)
    upstream.on('close', end).on('error', end)
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const address = server.address()
  if (address === null || typeof address === 'string') throw new Error('proxy has no port')
  return {
    port: address.port,
    hold() {
      for (const state of live) state.held = true
      sentSinceHold = 0
      heldBytes = 0
    },
    cutHeld() {
      for (const state of live) if (state.held) state.end()
    },
    get sentSinceHold() {
      return sentSinceHold
    },
    get heldBytes() {
      return heldBytes
    },
    async close() {
      for (const socket of sockets) socket.destroy()
      await new Promise<void>((resolve) => server.close(() => resolve()))
    },
  }
}
