/** One HTTP/2 stream of `h2-session.ts`: its owner's callbacks and its flow-control state. */
import type { HeaderFields } from './hpack.js'

/** What a stream's owner hears; `closed` comes exactly once, last. */
export interface H2Handler {
  headers(fields: HeaderFields, endStream: boolean): void
  data(payload: Buffer, endStream: boolean): void
  /** `rstCode`: the stream was reset (by either side); `error`: the connection failed. Neither: ended both ways. */
  closed(rstCode: number | undefined, error: Error | undefined): void
}

/** One stream's state. */
export class H2Stream {
  sendWindow: number
  /** DATA waiting for window, in order; `endPending`: END_STREAM goes with the last of it. */
  queued: Buffer[] = []
  endPending = false
  localEnded = false
  remoteEnded = false
  /** Received bytes not yet returned to the server by a WINDOW_UPDATE. */
  unacked = 0

  constructor(
    readonly id: number,
    readonly handler: H2Handler,
    window: number,
  ) {
    this.sendWindow = window
  }
}
