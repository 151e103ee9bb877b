/**
 * The buffers a socket reads into through `onread`: successive parts of one slab, a new slab once the rest is
 * small. A part is never read into again, so the frames and messages cut out of it (a frame not whole yet waits
 * for the next read as a view of it) stay as they were, as with the chunks node allocates per read itself.
 */
import type { OnReadOpts } from 'node:net'

/** Bytes per slab. */
const SLAB = 64 * 1024
/** The least room a read is offered; below it the next read starts a new slab. */
const MIN_READ = 16 * 1024

export class ReadSlabs {
  private slab = Buffer.allocUnsafe(SLAB)
  private at = 0

  /** The buffer for the next read. */
  next(): Buffer {
    if (this.slab.length - this.at < MIN_READ) {
      this.slab = Buffer.allocUnsafe(SLAB)
      this.at = 0
    }
    return this.slab.subarray(this.at)
  }

  /** The last read filled `length` bytes of the buffer {@link next} gave. */
  used(length: number): void {
    this.at += length
  }
}

/**
 * `net.connect`'s `onread` option reading into {@link ReadSlabs}: each chunk read goes to `push`, past node's
 * Readable push / 'data' / read-more path (a contended lock reads about one small chunk per process and
 * acquisition). Never pauses the socket: a frame not whole yet waits in the caller's reader.
 */
export function readIntoSlabs(push: (chunk: Buffer) => void): OnReadOpts {
  const slabs = new ReadSlabs()
  return {
    buffer: () => slabs.next(),
    callback: (length, buffer) => {
      slabs.used(length)
      push((buffer as Buffer).subarray(0, length))
      return true
    },
  }
}
