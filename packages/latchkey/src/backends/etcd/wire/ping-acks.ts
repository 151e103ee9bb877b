/**
 * The ACKs of the server's PINGs, sent with the next frame out rather than each on its own. etcd's server
 * (grpc-go) pings after DATA it receives, to estimate the bandwidth-delay product: about one PING per call here
 * (measured: 1.00), whose ACK alone was a third of this client's socket writes (each a syscall that, on one host,
 * also runs etcd's receive and wakes it). Riding on the next call's write only makes the server's estimate later;
 * a connection with nothing to send still answers within {@link PING_ACK_MS}.
 *
 * Such a bandwidth-delay PING (grpc-go marks it with its own payload, {@link BDP_PING}) is held longer: until its
 * ACK, grpc-go sends no other one (its estimator samples one PING at a time), so an ACK held back costs the server
 * nothing but that estimate of a window that small gRPC messages never fill. It is held at least
 * {@link BDP_PING_HOLD_MS}, then rides on the next frame out, or goes alone at {@link BDP_PING_ACK_MS}: grpc-go then
 * pings about twice a second per connection, where an ACK riding on the very next frame drew a PING per call
 * (1.13 per acquisition at 10 waiters over 4 processes: a frame to read, often a socket read and a wake-up of its
 * own, and a timer each). Any other PING (a keepalive, grpc-go's shutdown PING) is answered within 10 ms, and
 * brings a held bandwidth-delay ACK with it.
 */
import { ACK, frame, PING } from './h2-frames.js'

/** How long an ACK may wait for a frame to go out with. */
export const PING_ACK_MS = 10
/** How long the ACK of grpc-go's bandwidth-delay PING is held before a frame out may carry it. */
export const BDP_PING_HOLD_MS = 500
/** How long the ACK of grpc-go's bandwidth-delay PING may wait in all: then it goes alone. */
export const BDP_PING_ACK_MS = 1_000
/** The payload of grpc-go's bandwidth-delay PING (`bdpPing` in grpc-go's bdp_estimator.go). */
export const BDP_PING = Buffer.from([2, 4, 16, 16, 9, 14, 7, 7])

export class PingAcks {
  /** ACKs due within {@link PING_ACK_MS}. */
  private acks: Buffer[] = []
  /** The held ACK of a bandwidth-delay PING, and whether its hold is over (the next frame out may carry it). */
  private bdp: Buffer | undefined
  private bdpRipe = false
  private timer: NodeJS.Timeout | undefined
  /** Whether the pending timer is one of a held bandwidth-delay ACK (another PING brings it forward). */
  private isLong = false

  /** `write`: sends ACKs on their own once their wait passed without another write. */
  constructor(private readonly write: (out: Buffer) => void) {}

  /** A PING with `payload` came in. */
  add(payload: Buffer): void {
    const ack = frame(PING, ACK, 0, payload)
    if (payload.equals(BDP_PING) && this.bdp === undefined) {
      this.bdp = ack
      this.bdpRipe = false
      // Behind a short wait, the held ACK goes with the others.
      if (this.timer === undefined) this.arm(BDP_PING_HOLD_MS, true)
      return
    }
    this.acks.push(ack)
    if (this.timer !== undefined && !this.isLong) return
    this.arm(PING_ACK_MS, false)
  }

  /** `out` with the ACKs due in front of it (`out` alone when none are). */
  before(out: Buffer): Buffer {
    return this.acks.length === 0 && !this.bdpRipe ? out : this.take(out)
  }

  /** Drops the timer (the connection is gone). */
  stop(): void {
    clearTimeout(this.timer)
    this.timer = undefined
    this.acks = []
    this.bdp = undefined
    this.bdpRipe = false
  }

  private arm(ms: number, isLong: boolean): void {
    clearTimeout(this.timer)
    this.isLong = isLong
    this.timer = setTimeout(() => this.due(), ms)
    this.timer.unref()
  }

  private due(): void {
    this.timer = undefined
    if (this.acks.length === 0 && this.bdp !== undefined && !this.bdpRipe) {
      // The hold is over: the next frame out carries it, or it goes alone when the rest of its wait passes.
      this.bdpRipe = true
      this.arm(BDP_PING_ACK_MS - BDP_PING_HOLD_MS, true)
      return
    }
    if (this.acks.length > 0 || this.bdp !== undefined) this.write(this.take(undefined))
  }

  private take(out: Buffer | undefined): Buffer {
    const all = this.bdp === undefined ? this.acks : [this.bdp, ...this.acks]
    if (out !== undefined) all.push(out)
    const joined = all.length === 1 ? (all[0] as Buffer) : Buffer.concat(all)
    this.acks = []
    this.bdp = undefined
    this.bdpRipe = false
    clearTimeout(this.timer)
    this.timer = undefined
    return joined
  }
}
