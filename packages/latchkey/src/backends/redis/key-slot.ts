/**
 * Redis Cluster's key-to-slot mapping (CRC16-CCITT/XMODEM of the hash tag, mod 16384), so the layout can be
 * checked to keep every key of one lock in one slot without starting a cluster.
 */

const TABLE = buildTable()

function buildTable(): Uint16Array {
  const table = new Uint16Array(256)
  for (let i = 0; i < 256; i++) {
    let crc = i << 8
    for (let bit = 0; bit < 8; bit++) crc = crc & 0x8000 ? ((crc << 1) ^ 0x1021) & 0xffff : (crc << 1) & 0xffff
    table[i] = crc
  }
  return table
}

/** CRC16 (XMODEM: polynomial 0x1021, initial 0) of the UTF-8 bytes of `input`, as Redis Cluster computes it. */
export function crc16(input: string | Uint8Array): number {
  const bytes = typeof input === 'string' ? Buffer.from(input, 'utf8') : input
  let crc = 0
  for (const byte of bytes) crc = ((crc << 8) ^ (TABLE[((crc >> 8) ^ byte) & 0xff] as number)) & 0xffff
  return crc
}

/**
 * The cluster slot of `key`: only the part between the first `{` and the next `}` is hashed when it is
 * non-empty (the hash tag), otherwise the whole key.
 *
 * @example
 * keySlot('foo') // 12182, as CLUSTER KEYSLOT foo
 * keySlot('latchkey:{shop:order:42}') === keySlot('latchkey:{shop:order:42}:fence') // true
 */
export function keySlot(key: string): number {
  const bytes = Buffer.from(key, 'utf8')
  const open = bytes.indexOf(0x7b)
  if (open !== -1) {
    const close = bytes.indexOf(0x7d, open + 1)
    if (close > open + 1) return crc16(bytes.subarray(open + 1, close)) % 16384
  }
  return crc16(bytes) % 16384
}
