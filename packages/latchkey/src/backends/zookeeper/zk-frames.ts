/**
 * Cuts ZooKeeper's length-prefixed frames (a 4-byte big-endian length, then that many bytes) out of the chunks a
 * socket reads, handing each whole frame on as it completes. node-zookeeper-client does this itself by gluing every
 * chunk to the bytes left from the one before (a copy per chunk, and one more per extra frame in a chunk); here a
 * chunk holding whole frames is only sliced, and only a frame cut by a read boundary is copied once to join it.
 */
export class ZkFrames {
  /** The start of a frame not whole yet (a view of the chunk it came in, or a copy once joined). */
  private rest: Buffer | undefined

  /**
   * @param onFrame gets each whole frame, length prefix included
   * @param onCorrupt called (and reading stops) on a negative length, which no server sends: the stream is garbled
   */
  constructor(
    private readonly onFrame: (frame: Buffer) => void,
    private readonly onCorrupt: () => void,
  ) {}

  /**
   * Takes the next chunk read. `stopped` is asked before each frame: once it says true (the connection was torn
   * down by a frame handled before), the rest of the chunk is dropped.
   */
  push(chunk: Buffer, stopped: () => boolean): void {
    let buffer = chunk
    if (this.rest !== undefined) {
      buffer = Buffer.concat([this.rest, chunk])
      this.rest = undefined
    }
    let at = 0
    while (buffer.length - at >= 4) {
      const length = buffer.readInt32BE(at)
      if (length < 0) {
        this.rest = undefined
        this.onCorrupt()
        return
      }
      const end = at + 4 + length
      if (end > buffer.length) break
      if (stopped()) return
      this.onFrame(buffer.subarray(at, end))
      at = end
    }
    if (at < buffer.length) this.rest = buffer.subarray(at)
  }
}
