/**
 * The ACKs of the server's PINGs, sent with the next frame out rather than each on its own. etcd's server
 * (grpc-go) pings after DATA it receives, to estimate the bandwidth-delay product: about one PING per call here
 * (measured: 1.00), whose ACK alone was a third of this client's socket writes (each a syscall that, on one host,
 * also runs etcd's receive and wakes it). Riding on the next call's write only makes the server's estimate later;
 * a connection with nothing to send still answers within {@link PING_ACK_MS}.
 */
import { ACK, frame, PING } from './h2-frames.js'

/** How long an ACK may wait for a frame to go out with. */
export const PING_ACK_MS = 10

export class PingAcks {
  private acks: Buffer[] = []
  private timer: NodeJS.Timeout | undefined

  /** `write`: sends ACKs on their own once {@link PING_ACK_MS} passed without another write. */
  constructor(private readonly write: (out: Buffer) => void) {}

  /** A PING with `payload` came in. */
  add(payload: Buffer): void {
    this.acks.push(frame(PING, ACK, 0, payload))
    if (this.timer !== undefined) return
    this.timer = setTimeout(() => {
      this.timer = undefined
      if (this.acks.length > 0) this.write(this.take(undefined))
    }, PING_ACK_MS)
    this.timer.unref()
  }

  /** `out` with the waiting ACKs in front of it (`out` alone when none wait). */
  before(out: Buffer): Buffer {
    return this.acks.length === 0 ? out : this.take(out)
  }

  /** Drops the timer (the connection is gone). */
  stop(): void {
    clearTimeout(this.timer)
    this.timer = undefined
    this.acks = []
  }

  private take(out: Buffer | undefined): Buffer {
    if (out !== undefined) this.acks.push(out)
    const all = this.acks.length === 1 ? (this.acks[0] as Buffer) : Buffer.concat(this.acks)
    this.acks = []
    clearTimeout(this.timer)
    this.timer = undefined
    return all
  }
}
