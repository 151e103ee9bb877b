/**
 * The ACKs of the server's PINGs, sent with the next frame out rather than each on its own. etcd's server
 * (grpc-go) pings after DATA it receives, to estimate the bandwidth-delay product: about one PING per call here
 * (measured: 1.00), whose ACK alone was a third of this client's socket writes (each a syscall that, on one host,
 * also runs etcd's receive and wakes it). Riding on the next call's write only makes the server's estimate later;
 * a connection with nothing to send still answers within {@link PING_ACK_MS}.
 *
 * Such a bandwidth-delay PING (grpc-go marks it with its own payload, {@link BDP_PING}) may wait longer: until its
 * ACK, grpc-go sends no other one (its estimator samples one PING at a time), so an ACK held back costs the server
 * nothing but that estimate of a window that small gRPC messages never fill. A waiting process writes a txn
 * about every 25 ms at 10 waiters over 4 processes: a 10 ms wait sent 0.9 lone ACK writes per acquisition
 * there, 45% of the writes. Any other PING (a keepalive, grpc-go's shutdown PING) is answered within 10 ms.
 */
import { ACK, frame, PING } from './h2-frames.js'

/** How long an ACK may wait for a frame to go out with. */
export const PING_ACK_MS = 10
/** How long the ACK of grpc-go's bandwidth-delay PING may wait for a frame to go out with. */
export const BDP_PING_ACK_MS = 1_000
/** The payload of grpc-go's bandwidth-delay PING (`bdpPing` in grpc-go's bdp_estimator.go). */
export const BDP_PING = Buffer.from([2, 4, 16, 16, 9, 14, 7, 7])

export class PingAcks {
  private acks: Buffer[] = []
  private timer: NodeJS.Timeout | undefined
  /** Whether the pending timer is the long one of a bandwidth-delay PING (another PING brings it forward). */
  private isLong = false

  /** `write`: sends ACKs on their own once their wait passed without another write. */
  constructor(private readonly write: (out: Buffer) => void) {}

  /** A PING with `payload` came in. */
  add(payload: Buffer): void {
    this.acks.push(frame(PING, ACK, 0, payload))
    const isLong = payload.equals(BDP_PING)
    if (this.timer !== undefined && (isLong || !this.isLong)) return
    clearTimeout(this.timer)
    this.isLong = isLong
    this.timer = setTimeout(
      () => {
        this.timer = undefined
        if (this.acks.length > 0) this.write(this.take(undefined))
      },
      isLong ? BDP_PING_ACK_MS : PING_ACK_MS,
    )
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
